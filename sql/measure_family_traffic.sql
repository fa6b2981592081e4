-- Units a day of each new registration's organization and task type in the 28 days before
-- it registered: sessions, or distinct users for a user-randomized experiment. Registered
-- frame: new_registrations(experiment_id, org_id, task_type, randomization_unit, registered_at).
SELECT r.experiment_id,
       CASE WHEN r.randomization_unit = 'user' THEN count(DISTINCT s.user_id) ELSE count(s.session_id) END / 28.0
           AS traffic_per_day
FROM new_registrations r
LEFT JOIN staged_sessions s
  ON s.org_id = r.org_id AND s.task_type = r.task_type
 AND s.started_at < r.registered_at AND s.started_at >= r.registered_at - INTERVAL 28 DAY
GROUP BY r.experiment_id, r.randomization_unit
