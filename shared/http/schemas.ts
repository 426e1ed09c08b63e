import * as v from 'valibot';

/** Building blocks shared by the services' request schemas (and so by the OpenAPI document). */
export const Hex32 = v.pipe(
  v.string('must be a string'),
  v.regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x followed by 64 hex characters (a 32-byte hash)'),
);

export const NonEmptyString = (max = 4096) =>
  v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(max, `must be at most ${max} characters`));

export const ErrorResponse = v.object({
  success: v.literal(false),
  error: v.object({
    code: v.string(),
    message: v.string(),
    request_id: v.optional(
      v.pipe(v.string(), v.description('On 500 INTERNAL_ERROR only: the request id (also the X-Request-Id header) to quote when reporting the failure.')),
    ),
  }),
});
