/*
 * The connection test needs no data of its own: each unit attaches, runs a trivial query and
 * detaches. What it measures is the engine's attach and detach path — for Classic a new
 * process per attachment, for SuperClassic and SuperServer a thread and the attachment's
 * structures (and, for SuperClassic and Classic, a page cache of its own each time).
 */
create table connect_marker (id integer not null primary key);
insert into connect_marker values (1);
