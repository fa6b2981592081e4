-- Cumulative sufficient statistics per experiment, metric, arm and stratum, on every UTC day
-- on which they changed, as of one look ($as_of_end: end of the look's UTC day): the running
-- sums of the stored daily changes (arm_day_sums, aggregate_arm_day_sums.sql).
-- Centered sums n*Q - S^2 are computed exactly, in doubles only where n*Q would not fit in
-- 128 bits; the conversion to the metric's unit happens once, here. The CUPED covariate's sums
-- (x, its indicator h, and their cross-products with the unit mean v) come the same way.
WITH arm_path AS (
    SELECT experiment_id, arm, metric, segment, day, resolution,
           sum(dn) OVER w AS n, sum(dv) OVER w AS sv, sum(dv2) OVER w AS sv2,
           sum(dy) OVER w AS sy, sum(dy2) OVER w AS sy2, sum(dm) OVER w AS sm,
           sum(dm2) OVER w AS sm2, sum(dym) OVER w AS sym,
           sum(dx) OVER w AS sx, sum(dx2) OVER w AS sx2, sum(dxv) OVER w AS sxv,
           sum(dh) OVER w AS sh, sum(dhv) OVER w AS shv
    FROM arm_day_sums
    WHERE day < CAST($as_of_end AS DATE)
    WINDOW w AS (PARTITION BY experiment_id, arm, metric, segment ORDER BY day ROWS UNBOUNDED PRECEDING)
)
SELECT experiment_id, arm, metric, segment, day,
       CAST(n AS BIGINT) AS n,
       CAST(sv AS DOUBLE) * resolution / 1000000 AS sum_v,
       CASE WHEN CAST(n AS DOUBLE) * CAST(sv2 AS DOUBLE) < 1e38 THEN CAST(n * sv2 - sv * sv AS DOUBLE)
            ELSE CAST(n AS DOUBLE) * CAST(sv2 AS DOUBLE) - CAST(sv AS DOUBLE) * CAST(sv AS DOUBLE) END
           / CAST(n AS DOUBLE) * (resolution / 1000000) * (resolution / 1000000) AS m2_v,
       CAST(NULL AS DOUBLE) AS variance,
       CAST(sy AS DOUBLE) * resolution AS successes,
       CAST(sm AS DOUBLE) AS observations,
       CAST(sy AS DOUBLE) * resolution AS sum_y,
       CAST(sm AS DOUBLE) AS sum_m,
       CASE WHEN CAST(n AS DOUBLE) * CAST(sy2 AS DOUBLE) < 1e38 THEN CAST(n * sy2 - sy * sy AS DOUBLE)
            ELSE CAST(n AS DOUBLE) * CAST(sy2 AS DOUBLE) - CAST(sy AS DOUBLE) * CAST(sy AS DOUBLE) END
           / CAST(n AS DOUBLE) * resolution * resolution AS c_yy,
       CAST(n * sm2 - sm * sm AS DOUBLE) / CAST(n AS DOUBLE) AS c_mm,
       CASE WHEN abs(CAST(n AS DOUBLE) * CAST(sym AS DOUBLE)) < 1e38 THEN CAST(n * sym - sy * sm AS DOUBLE)
            ELSE CAST(n AS DOUBLE) * CAST(sym AS DOUBLE) - CAST(sy AS DOUBLE) * CAST(sm AS DOUBLE) END
           / CAST(n AS DOUBLE) * resolution AS c_ym,
       -- the CUPED covariate (x, h) and its cross-products with the unit mean v
       CAST(sx AS DOUBLE) * resolution / 1000000 AS sum_x,
       CAST(sh AS DOUBLE) AS sum_h,
       CASE WHEN abs(CAST(n AS DOUBLE) * CAST(sx2 AS DOUBLE)) < 1e38 THEN CAST(n * sx2 - sx * sx AS DOUBLE)
            ELSE CAST(n AS DOUBLE) * CAST(sx2 AS DOUBLE) - CAST(sx AS DOUBLE) * CAST(sx AS DOUBLE) END
           / CAST(n AS DOUBLE) * (resolution / 1000000) * (resolution / 1000000) AS m2_x,
       CAST(n * sh - sh * sh AS DOUBLE) / CAST(n AS DOUBLE) AS m2_h,
       CASE WHEN abs(CAST(n AS DOUBLE) * CAST(sx AS DOUBLE)) < 1e38 THEN CAST(n * sx - sh * sx AS DOUBLE)
            ELSE CAST(n AS DOUBLE) * CAST(sx AS DOUBLE) - CAST(sh AS DOUBLE) * CAST(sx AS DOUBLE) END
           / CAST(n AS DOUBLE) * resolution / 1000000 AS c_xh,
       CASE WHEN abs(CAST(n AS DOUBLE) * CAST(sxv AS DOUBLE)) < 1e38 THEN CAST(n * sxv - sx * sv AS DOUBLE)
            ELSE CAST(n AS DOUBLE) * CAST(sxv AS DOUBLE) - CAST(sx AS DOUBLE) * CAST(sv AS DOUBLE) END
           / CAST(n AS DOUBLE) * (resolution / 1000000) * (resolution / 1000000) AS c_xv,
       CASE WHEN abs(CAST(n AS DOUBLE) * CAST(shv AS DOUBLE)) < 1e38 THEN CAST(n * shv - sh * sv AS DOUBLE)
            ELSE CAST(n AS DOUBLE) * CAST(shv AS DOUBLE) - CAST(sh AS DOUBLE) * CAST(sv AS DOUBLE) END
           / CAST(n AS DOUBLE) * resolution / 1000000 AS c_hv
FROM arm_path
ORDER BY experiment_id, metric, arm, segment, day
