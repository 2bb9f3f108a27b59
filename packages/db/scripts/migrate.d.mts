export declare const prismaDir: string;
export declare const migrationsDir: string;
export declare const schemaPath: string;
export declare function listMigrations(dir?: string): { name: string; sql: string; checksum: string }[];
export declare function deployMigrations(
  databaseUrl: string,
  options?: { log?: (message: string) => void },
): Promise<string[]>;
export declare function diffDatamodels(databaseUrl: string, from: string | null, to: string): Promise<string>;
