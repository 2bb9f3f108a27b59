-- AlterTable
ALTER TABLE "executions" ADD COLUMN     "push_holder" TEXT;

-- CreateIndex
CREATE INDEX "executions_push_holder_idx" ON "executions"("push_holder") WHERE (status = 'running' AND push_holder IS NOT NULL);
