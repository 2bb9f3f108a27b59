-- AlterTable
ALTER TABLE "executions" ADD COLUMN     "lease" INTEGER NOT NULL DEFAULT 0;
