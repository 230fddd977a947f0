create table acct (id integer not null primary key, touched integer default 0 not null,
                   confirmed integer default 0 not null);
