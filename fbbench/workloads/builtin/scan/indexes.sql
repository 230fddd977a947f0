-- After the load, as a bulk build: the index the range scan reads.
create index scan_keyed_k on scan_keyed (k);
