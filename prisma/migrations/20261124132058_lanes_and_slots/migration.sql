-- A run's lane (queue_name) and the BullMQ queue its jobs go to (dispatch_queue) are now apart.
-- Existing runs keep dispatching where they did: to the queue named by their lane.
ALTER TABLE "executions" ADD COLUMN     "dispatch_queue" TEXT,
ADD COLUMN     "slot_waiting_since" TIMESTAMPTZ(3);
UPDATE "executions" SET "dispatch_queue" = "queue_name";
ALTER TABLE "executions" ALTER COLUMN "dispatch_queue" SET NOT NULL;

-- CreateIndex
CREATE INDEX "executions_project_id_queue_name_concurrency_key_status_idx" ON "executions"("project_id", "queue_name", "concurrency_key", "status");
