import * as v from 'valibot';

/** Building blocks shared by the services' request schemas (and so by the OpenAPI document). */
export const Hex32 = v.pipe(v.string('must be a string'), v.regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x followed by 64 hex characters (a 32-byte hash)'));

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
    rule_id: v.optional(
      v.pipe(
        v.nullable(v.string()),
        v.description("On 403 POLICY_DENIED only: the id of the application's policy rule that denied the signature (null when no rule allowed it)."),
      ),
    ),
  }),
});

/**
 * A JSON number that is an integer a JS number holds exactly (|n| <= 2^53 - 1) and lies in
 * [min, max]. `1e308` and `9007199254740993` (which JSON.parse rounds) are refused here, as a 400,
 * rather than deep inside a signer.
 */
export const SafeInteger = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  v.pipe(
    v.number('must be a number'),
    v.safeInteger(`must be an integer between ${min} and ${max}`),
    v.minValue(min, `must be an integer between ${min} and ${max}`),
    v.maxValue(max, `must be an integer between ${min} and ${max}`),
  );

export const MAX_UINT64 = 2n ** 64n - 1n;
export const MAX_UINT256 = 2n ** 256n - 1n;

/**
 * A non-negative integer as a decimal string (no sign, no leading zeros) that fits in `bits`
 * bits; it stays a string on the wire and becomes a bigint where it is used.
 */
export const DecimalUint = (bits: 64 | 256) => {
  const max = 2n ** BigInt(bits) - 1n;
  const digits = max.toString().length;
  return v.pipe(
    v.string('must be a decimal string'),
    v.regex(new RegExp(`^(0|[1-9][0-9]{0,${digits - 1}})$`), `must be a non-negative integer as a decimal string, at most 2^${bits} - 1`),
    v.check((value) => BigInt(value) <= max, `must be at most 2^${bits} - 1`),
    v.description(`A uint${bits} as a decimal string: at most 2^${bits} - 1.`),
  );
};

/**
 * A list route's `?limit=`: a whole number from 1 to `max` as a query string, `defaultLimit` when
 * absent (the handler applies it); `note` adds to the OpenAPI description.
 */
export const LimitQuery = (defaultLimit: number, max: number, note = '') => {
  const message = `must be an integer from 1 to ${max}`;
  return v.object({
    limit: v.optional(
      v.pipe(
        v.string(),
        v.regex(/^[0-9]{1,3}$/, message),
        v.transform(Number),
        v.minValue(1, message),
        v.maxValue(max, message),
        v.description(`Default ${defaultLimit}, at most ${max}${note}.`),
      ),
    ),
  });
};
