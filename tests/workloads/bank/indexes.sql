create index transfer_log_from on transfer_log (from_id);
create index transfer_log_to on transfer_log (to_id);
