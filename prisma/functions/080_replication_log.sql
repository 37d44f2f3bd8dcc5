-- Reading the replication log and the catalog digest. Current definitions, applied after the
-- migrations on every start (prisma/functions/README.md).

-- A log entry's changes with the data of its batches in place: as peers receive them. The data of
-- batch changes (ops B and V) is kept beside the log entry (repl_log_data), and the entry's change
-- names it (`"x": change id`, `"d": null`; docs/replication.md, "Extraction").
CREATE OR REPLACE FUNCTION repl_log_changes(p_seq BIGINT) RETURNS JSONB LANGUAGE sql STABLE AS $$
  SELECT COALESCE(to_jsonb(array_agg(CASE WHEN e.x ? 'x' THEN (e.x - 'x') || jsonb_build_object('d', d."data") ELSE e.x END
                                     ORDER BY e.n)), '[]'::jsonb)
    FROM "repl_log" l CROSS JOIN LATERAL jsonb_array_elements(l."changes") WITH ORDINALITY AS e(x, n)
    LEFT JOIN "repl_log_data" d ON d."seq" = l."seq" AND d."change_id" = (e.x ->> 'x')::BIGINT
   WHERE l."seq" = p_seq
$$;

-- A digest of the replicated catalog that is independent of row order and of local-only columns:
-- equal digests at two sites mean equal catalogs. One row per table plus the total.
CREATE OR REPLACE FUNCTION repl_digest() RETURNS TABLE ("tbl" TEXT, "rows" BIGINT, "digest" TEXT) LANGUAGE plpgsql SET "TimeZone" = 'UTC' AS $$
DECLARE
  t RECORD;
  v_rows BIGINT;
  v_digest TEXT;
  v_all TEXT := '';
  v_total BIGINT := 0;
BEGIN
  FOR t IN SELECT * FROM "repl_tables" ORDER BY "name" LOOP
    EXECUTE format(
      'SELECT count(*), md5(COALESCE(string_agg(md5((to_jsonb(x) - $1)::text), '''' ORDER BY x.%I::text), '''')) FROM %I x',
      t."key_column", t."name")
      INTO v_rows, v_digest USING t."local_columns";
    tbl := t."name"; "rows" := v_rows; digest := v_digest;
    v_all := v_all || t."name" || ':' || v_digest || ';';
    v_total := v_total + v_rows;
    RETURN NEXT;
  END LOOP;
  tbl := '*'; "rows" := v_total; digest := md5(v_all);
  RETURN NEXT;
END
$$;
