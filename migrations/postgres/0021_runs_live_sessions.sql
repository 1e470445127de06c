-- The live sandbox sessions (issue 32): the capacity rule counts a
-- workspace's at every create, GET /sandboxes lists them and a restarted
-- worker reconciles them with its containers (store.Sessions). Without
-- this they were found by scanning every run of the workspace (or, for
-- the reconcile, of every workspace). A partial index holds only the
-- running sandbox runs, so it stays as small as the caps keep them, and
-- ListLiveSessions's `kind = 'sandbox' AND status = 'running'` reads it
-- in its order. Built once over the runs table at upgrade (a scan; the
-- migration runs in its transaction, so not CONCURRENTLY). SQLite's 0021
-- is the same.
CREATE INDEX runs_live_sessions_idx ON runs (workspace, created_at, id)
	WHERE kind = 'sandbox' AND status = 'running';
