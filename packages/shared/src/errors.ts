/**
 * Error types of the REST contract. Every 4xx/5xx body is `{error, error_type, details?}`.
 * The engine throws these; the API maps them to HTTP in one place (apps/api/src/errors.ts).
 */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  INVALID_INPUT: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorType = keyof typeof ERROR_STATUS;

export interface ErrorBody {
  error: string;
  error_type: ErrorType;
  details?: unknown;
}

export class SpoolError extends Error {
  readonly status: number;
  constructor(
    readonly type: ErrorType,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = "SpoolError";
    this.status = ERROR_STATUS[type];
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { error: this.message, error_type: this.type }
      : { error: this.message, error_type: this.type, details: this.details };
  }
}

export const notFound = (what: string, id: string) =>
  new SpoolError("NOT_FOUND", `${what} '${id}' not found`);
export const conflict = (message: string, details?: unknown) => new SpoolError("CONFLICT", message, details);
export const badRequest = (message: string, details?: unknown) =>
  new SpoolError("BAD_REQUEST", message, details);
export const invalidInput = (message: string, details?: unknown) =>
  new SpoolError("INVALID_INPUT", message, details);
export const forbidden = (message: string) => new SpoolError("FORBIDDEN", message);
export const unauthorized = (message: string) => new SpoolError("UNAUTHORIZED", message);

export const isSpoolError = (err: unknown): err is SpoolError => err instanceof SpoolError;
