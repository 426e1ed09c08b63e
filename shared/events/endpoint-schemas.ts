import * as v from 'valibot';
import { EVENT_TYPES, EventTypeSchema, MAX_ENDPOINTS_PER_APP } from './types.ts';
import { MAX_WEBHOOK_URL_LENGTH } from './webhook-url.ts';

/**
 * Wire schemas of the /webhook-endpoints routes (issue 24): what the handlers validate with and
 * what the OpenAPI document shows. The URL rules and the event-type check are the use case's
 * (shared/events/endpoints.ts), so they answer 422 with a code that names the problem.
 */
export const MAX_DESCRIPTION_LENGTH = 256;
/** More entries than there are types is a mistake; duplicates within that are folded. */
const MAX_EVENTS = EVENT_TYPES.length * 2;

const SECRET_EXAMPLE = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw7vX1TtPsY2c=';
const ID_EXAMPLE = 'we_0199a3c4-5b6e-7f80-9a1b-2c3d4e5f6a7b';

/** Path `{id}` of DELETE and rotate-secret: 400 INVALID_REQUEST `path.id` when it is not an endpoint id at all. */
export const EndpointPathParams = v.object({
  id: v.pipe(v.string(), v.regex(/^we_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'must be a webhook endpoint id (we_<UUIDv7>)')),
});

export const CreateEndpointRequest = v.pipe(
  v.strictObject({
    url: v.pipe(
      v.string(),
      v.minLength(1, 'is required'),
      v.maxLength(MAX_WEBHOOK_URL_LENGTH, `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`),
      v.description(
        'Where deliveries are POSTed. In AWS: https only, no user name or password, a public host (no loopback, private, link-local, CGNAT, multicast, documentation or benchmarking address; no localhost, *.local, *.internal). The sandbox also takes http to 127.0.0.1, localhost and [::1] on any port. 422 WEBHOOK_URL_NOT_ALLOWED / WEBHOOK_URL_INVALID otherwise.',
      ),
    ),
    events: v.optional(
      v.pipe(
        v.array(v.pipe(v.string(), v.maxLength(64, 'must be at most 64 characters'))),
        v.minLength(1, 'must list at least one event type (leave it out for every type)'),
        v.maxLength(MAX_EVENTS, `must list at most ${MAX_EVENTS} types`),
        v.description(
          `The event types to deliver; absent means every type, present and future. One of: ${EVENT_TYPES.join(', ')}. 422 UNKNOWN_EVENT_TYPE names an unknown one.`,
        ),
      ),
    ),
    description: v.optional(
      v.pipe(
        v.string(),
        v.maxLength(MAX_DESCRIPTION_LENGTH, `must be at most ${MAX_DESCRIPTION_LENGTH} characters`),
        v.regex(/^[^\p{Cc}]*$/u, 'must not contain control characters'),
      ),
    ),
  }),
  v.examples([{ url: 'https://hooks.example.com/perp-wallet', events: ['task.completed', 'task.failed'], description: 'Ops alerts' }]),
);
export type CreateEndpointInput = v.InferOutput<typeof CreateEndpointRequest>;

const LastDelivery = v.object({
  at: v.string(),
  ok: v.boolean(),
  status: v.optional(v.pipe(v.number(), v.description("The receiver's HTTP status, when it answered."))),
  message: v.optional(v.pipe(v.string(), v.description('Why it failed (timeout, connection refused, a non-2xx status); never the body.'))),
});

/** An endpoint as every route shows it: nothing of its signing secrets. */
export const EndpointResource = v.object({
  id: v.pipe(v.string(), v.description('`we_` + UUIDv7.')),
  url: v.string(),
  events: v.pipe(v.nullable(v.array(EventTypeSchema)), v.description('null: every event type.')),
  description: v.nullable(v.string()),
  created_at: v.string(),
  status: v.pipe(
    v.picklist(['enabled', 'failing']),
    v.description(
      '`failing` once deliveries to it have failed for 3 days (failing_since: when the failures began); the next successful delivery makes it `enabled` again.',
    ),
  ),
  failing_since: v.optional(v.string()),
  last_delivery: v.optional(LastDelivery),
});
export type EndpointResource = v.InferOutput<typeof EndpointResource>;

const Secret = v.pipe(
  v.string(),
  v.description('The signing secret (Standard Webhooks: `whsec_` + base64 of 32 random bytes). Shown in this response only: store it now.'),
);

const ENDPOINT_EXAMPLE: EndpointResource = {
  id: ID_EXAMPLE,
  url: 'https://hooks.example.com/perp-wallet',
  events: ['task.completed', 'task.failed'],
  description: 'Ops alerts',
  created_at: '2026-09-01T12:00:00.000Z',
  status: 'enabled',
};

export const CreateEndpointResponse = v.pipe(
  v.object({ success: v.literal(true), ...EndpointResource.entries, secret: Secret }),
  v.examples([{ success: true, ...ENDPOINT_EXAMPLE, secret: SECRET_EXAMPLE }]),
);

export const ListEndpointsResponse = v.pipe(
  v.object({
    success: v.literal(true),
    endpoints: v.pipe(v.array(EndpointResource), v.description('Oldest first.')),
    limit: v.pipe(v.number(), v.description(`At most this many endpoints per app (${MAX_ENDPOINTS_PER_APP}).`)),
  }),
  v.examples([
    {
      success: true,
      endpoints: [
        { ...ENDPOINT_EXAMPLE, last_delivery: { at: '2026-09-01T12:05:00.000Z', ok: true, status: 200 } },
        {
          ...ENDPOINT_EXAMPLE,
          id: 'we_0199a3c4-7d10-7a22-8b33-4c55d66e77f8',
          url: 'https://old.example.com/hooks',
          events: null,
          description: null,
          status: 'failing' as const,
          failing_since: '2026-08-28T09:00:00.000Z',
          last_delivery: { at: '2026-08-31T09:00:00.000Z', ok: false, status: 503, message: 'HTTP 503' },
        },
      ],
      limit: MAX_ENDPOINTS_PER_APP,
    },
  ]),
);

export const DeleteEndpointResponse = v.pipe(v.object({ success: v.literal(true), id: v.string() }), v.examples([{ success: true, id: ID_EXAMPLE }]));

export const RotateSecretResponse = v.pipe(
  v.object({
    success: v.literal(true),
    id: v.string(),
    secret: Secret,
    previous_secret_expires_at: v.pipe(
      v.string(),
      v.description('Until then deliveries carry a signature with the previous secret too (webhook-signature lists both); after it, only the new one.'),
    ),
  }),
  v.examples([{ success: true, id: ID_EXAMPLE, secret: SECRET_EXAMPLE, previous_secret_expires_at: '2026-09-02T12:00:00.000Z' }]),
);
