-- The value of one metric in one outcome, as the look reads it: the one rule for every SQL file
-- that reads a metric's value (each includes it by its name in double braces). By the column metric:
-- success (as 0 or 1), time in minutes, tokens or score; time and tokens capped at the
-- experiment's registered caps cap_time and cap_tokens (metric_caps). A cap applies to a value
-- that exceeds it: least() would skip a missing value and give the cap in its place.
-- Reads the unqualified columns metric, success, time_minutes, tokens, score, cap_time, cap_tokens.
CASE metric WHEN 'success' THEN CAST(success AS DOUBLE)
            WHEN 'time_minutes' THEN CASE WHEN time_minutes > cap_time THEN cap_time ELSE time_minutes END
            WHEN 'tokens' THEN CASE WHEN tokens > cap_tokens THEN cap_tokens ELSE tokens END
            WHEN 'score' THEN score END
