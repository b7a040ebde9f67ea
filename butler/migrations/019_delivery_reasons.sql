-- Nothing the butler meant to send is dropped without a row: a message a limit refused
-- is "refused" (the reason in error), one merged into a quiet-hours digest is "merged"
-- (error names the digest's row).
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
    CHECK (status IN ('held', 'pending', 'sending', 'delivered', 'failed', 'refused', 'merged'));
