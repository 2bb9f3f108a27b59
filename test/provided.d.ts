// Values test/global-setup.ts provides to every test file via `inject()`.
declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    redisUrl: string;
  }
}

export {};
