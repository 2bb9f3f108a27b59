-- CreateIndex
CREATE INDEX "executions_open_deadline_idx" ON "executions"("deadline_at") WHERE (deadline_at IS NOT NULL AND status IN ('queued', 'running', 'waiting', 'suspended'));

-- CreateIndex
CREATE INDEX "executions_slot_waiters_idx" ON "executions"("project_id", "queue_name", "concurrency_key", "created_at", "id") WHERE (status = 'queued' AND slot_waiting_since IS NOT NULL);
