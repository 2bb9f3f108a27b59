-- AlterTable
ALTER TABLE "workers" ADD COLUMN     "consumer_name" TEXT,
ADD COLUMN     "consumer_seen_at" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "workers_consumer_name_idx" ON "workers"("consumer_name");
