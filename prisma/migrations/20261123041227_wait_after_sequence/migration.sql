-- AlterTable
ALTER TABLE "waits" ADD COLUMN     "after_sequence" BIGINT;
