-- arkhe ledger: on Citus, a mint receipt lives only in the receipt table.
--
-- The receipt table's key (client, request ID) makes a receipt unique across the cluster. A
-- receipt written on an ark row would escape that key: no unique index over the ARK's
-- distribution can cover (client, request ID). So on Citus the ark row carries none. On one node
-- the receipt is the ark row's own (request_id, payload_digest), unique by ark_receipt.

do $$
begin
    if arkhe_layout() <> 'single' then
        alter table ark add constraint ark_receipt_elsewhere
            check (request_id is null and payload_digest is null);
    end if;
end $$;
