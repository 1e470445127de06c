-- The hosts each workspace secret may be sent to (its allowedHosts, set by
-- an admin with PUT /secrets/:name): a JSON array of host patterns. A
-- secret stored before this migration is bound to no host, so probes and
-- drivers refuse to send it until an admin stores it again with
-- allowedHosts; harness secretEnv values are not sent to a host and are
-- unaffected.
ALTER TABLE secrets ADD COLUMN allowed_hosts jsonb NOT NULL DEFAULT '[]';
