/**
 * Typed domain errors. Each carries a stable UPPER_SNAKE `code` and the HTTP status it maps to;
 * shared/http/error-handler.ts turns them into `{ success: false, error: { code, message } }`.
 */
export class DomainError extends Error {
  readonly code: string;
  readonly status: number;
  /** Seconds after which a retry may succeed: the response's `Retry-After` header (409s, 503s). */
  readonly retryAfterSeconds?: number;
  /** Extra fields of `error` in the response beside `code` and `message` (403 POLICY_DENIED's `rule_id`); never secrets. */
  readonly fields?: Readonly<Record<string, string | null>>;
  constructor(status: number, code: string, message: string, options: { retryAfterSeconds?: number; fields?: Readonly<Record<string, string | null>> } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = Math.max(1, Math.ceil(options.retryAfterSeconds));
    if (options.fields !== undefined) this.fields = options.fields;
  }
}

/** 400: the request is malformed; the message names the field. */
export class ValidationError extends DomainError {
  constructor(message: string, code = 'INVALID_REQUEST') {
    super(400, code, message);
  }
}

/** 401: missing or invalid credentials. */
export class UnauthorizedError extends DomainError {
  constructor(code: string, message: string) {
    super(401, code, message);
  }
}

/** 403: valid credentials that do not allow this. */
export class ForbiddenError extends DomainError {
  constructor(code: string, message: string) {
    super(403, code, message);
  }
}

/**
 * 403 POLICY_DENIED: the app's signing policy (issue 22) refuses this signature. `rule_id` names
 * the deciding rule (null when no rule allowed it); the message names the rule, never the body.
 */
export class PolicyDeniedError extends DomainError {
  readonly ruleId: string | null;
  constructor(ruleId: string | null, message: string) {
    super(403, 'POLICY_DENIED', message, { fields: { rule_id: ruleId } });
    this.ruleId = ruleId;
  }
}

export class NotFoundError extends DomainError {
  constructor(code: string, message: string) {
    super(404, code, message);
  }
}

export class ConflictError extends DomainError {
  constructor(code: string, message: string, options: { retryAfterSeconds?: number } = {}) {
    super(409, code, message, options);
  }
}

export class GoneError extends DomainError {
  constructor(code: string, message: string) {
    super(410, code, message);
  }
}

/** 422: well-formed but not possible (insufficient funds, migration required, ...). */
export class UnprocessableError extends DomainError {
  constructor(code: string, message: string) {
    super(422, code, message);
  }
}

/** 502: a dependency (the enclave, a chain) failed; the message names no internals. */
export class UpstreamError extends DomainError {
  constructor(code: string, message: string) {
    super(502, code, message);
  }
}
