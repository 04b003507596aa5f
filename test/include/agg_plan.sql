-- Shared plan helper of the statistics tests (\i test/include/agg_plan.sql:
-- created in the first schema of search_path; drop it with the test's objects).

-- agg_plan(query): EXPLAIN (ANALYZE, FORMAT JSON) of query (it runs), and its
-- topmost Aggregate node.
CREATE FUNCTION agg_plan(query text, OUT plan jsonb, OUT node jsonb) LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || query INTO plan;
    node := plan -> 0 -> 'Plan';
    WHILE node ->> 'Node Type' <> 'Aggregate' LOOP
        node := node -> 'Plans' -> 0;
    END LOOP;
END $$;
