-- A generation's routing record survives PostgreSQL being down when its upstream answers: the
-- router's own write is best effort (a produced image is not failed over bookkeeping), so the
-- provider step also hands its route entry to the workflow, whose settle writes it again in the
-- charge's transaction (core/ledger/resolve.ts). Each entry is one call of the router, named by
-- `call`: `calls` lists those already merged, so whichever write comes second (or a retried
-- settle) changes nothing, and `tried` never counts one call twice.
ALTER TABLE generation_upstreams ADD COLUMN calls text[] NOT NULL DEFAULT '{}';
