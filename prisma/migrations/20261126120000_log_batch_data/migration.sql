-- The data of batch changes (op B, a statement's inserts; op V, its updates) is logged beside the log
-- entry rather than inside it (docs/replication.md, "Extraction"). The extractor gathered each
-- transaction's changes into one JSON array, which took every batch's JSON apart and put it together
-- again, twice, and compressed it again: for a bulk load of metadata triples, 9 MB of JSON per 100,000
-- triples. A batch's data now moves from the change table into repl_log_data unchanged (PostgreSQL
-- copies the stored, compressed value as it is), and its change in the log entry names it (`"x":
-- change id`, `"d": null`). Whoever reads a log entry for its data (the dispatcher; repl_log_changes)
-- puts the data back, so peers receive what they received before. Log entries made before this
-- migration keep their data inline.
CREATE TABLE "repl_log_data" (
    "seq" BIGINT NOT NULL,
    "change_id" BIGINT NOT NULL,
    "data" JSONB NOT NULL,
    CONSTRAINT "repl_log_data_pkey" PRIMARY KEY ("seq", "change_id"),
    CONSTRAINT "repl_log_data_seq_fkey" FOREIGN KEY ("seq") REFERENCES "repl_log"("seq") ON DELETE CASCADE
);

-- A log entry's changes with the data of its batches in place: as peers receive them.
CREATE FUNCTION repl_log_changes(p_seq BIGINT) RETURNS JSONB LANGUAGE sql STABLE AS $$
  SELECT COALESCE(to_jsonb(array_agg(CASE WHEN e.x ? 'x' THEN (e.x - 'x') || jsonb_build_object('d', d."data") ELSE e.x END
                                     ORDER BY e.n)), '[]'::jsonb)
    FROM "repl_log" l CROSS JOIN LATERAL jsonb_array_elements(l."changes") WITH ORDINALITY AS e(x, n)
    LEFT JOIN "repl_log_data" d ON d."seq" = l."seq" AND d."change_id" = (e.x ->> 'x')::BIGINT
   WHERE l."seq" = p_seq
$$;
