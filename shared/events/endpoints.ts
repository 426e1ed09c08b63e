import { randomBytes } from 'node:crypto';
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import * as v from 'valibot';
import type { KeyWrapper } from '../crypto/key-wrapper.ts';
import { openSecrets, type SealedSecrets, sealSecrets } from '../crypto/secret-box.ts';
import { getItem, isConditionalCheckFailed, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { ConflictError, NotFoundError, UnprocessableError } from '../errors.ts';
import type { CreateEndpointInput, EndpointResource } from './endpoint-schemas.ts';
import { EVENT_TYPES, type EventType, EventTypeSchema, MAX_ENDPOINTS_PER_APP } from './types.ts';
import { checkWebhookUrl, type WebhookUrlMode } from './webhook-url.ts';

/**
 * An app's webhook endpoints (issue 24): the use cases behind /webhook-endpoints and the reads and
 * writes the deliverer makes. One partition per app, `WEBHOOKS#<app_id>`: each endpoint is
 * `EP#<endpoint_id>`, listed with one Query; beside them `SLOTS`, the string set of the app's
 * endpoint ids. A create first adds its id to that set under the condition that the set holds
 * fewer than MAX_ENDPOINTS_PER_APP ids, so concurrent creates at the limit cannot both pass
 * (DynamoDB evaluates the condition and the update atomically); then it puts the endpoint.
 *
 * The signing secret is sealed at rest (envelope encryption, the account service's key, encryption
 * context `{ purpose: 'webhook-secret', app_id, endpoint_id }`). Each secret is sealed on its own,
 * under its own data key, so rotating moves the current sealed secret aside unopened: creating and
 * rotating need GenerateDataKey only, and only the deliverer (signingSecrets) needs Decrypt.
 */
export interface EndpointStoreDeps {
  readonly table: Table;
}
export interface EndpointSealDeps extends EndpointStoreDeps {
  readonly keyWrapper: KeyWrapper;
  readonly now: () => Date;
}
export interface CreateEndpointDeps extends EndpointSealDeps {
  readonly urlMode: WebhookUrlMode;
}

/** How long the previous secret keeps signing beside the new one after a rotation. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3600 * 1000;
/** Standard Webhooks allows 24-64 random bytes; 32 is its examples' size and HMAC-SHA256's block-safe key size. */
const SECRET_BYTES = 32;
const SECRET_NAME = 'signing_secret';
/**
 * A slot whose endpoint item does not exist this long after the slot was taken (the id is a
 * UUIDv7: its time) belongs to a create that died between its two writes, or a delete that died
 * between its two: it is given back. Far above the milliseconds between the writes.
 */
const STALE_SLOT_MS = 60_000;
/** Concurrent rotations of one endpoint are rare; past this many lost races the caller is asked to retry. */
const MAX_ROTATE_ATTEMPTS = 4;
const MAX_DELIVERY_MESSAGE = 200;

const SealedSchema = v.object({ wrapped_key: v.string(), secrets: v.record(v.string(), v.string()) });
const StoredSecretSchema = v.object({ sealed: SealedSchema, created_at: v.string() });
const LastDeliverySchema = v.object({ at: v.string(), ok: v.boolean(), status: v.optional(v.number()), message: v.optional(v.string()) });

/** The endpoint item (keys stripped): parsed, never cast, so a malformed item fails loudly instead of delivering oddly. */
const EndpointItemSchema = v.object({
  id: v.string(),
  app_id: v.string(),
  url: v.string(),
  events: v.optional(v.array(EventTypeSchema)),
  description: v.optional(v.string()),
  created_at: v.string(),
  status: v.picklist(['enabled', 'failing']),
  failing_since: v.optional(v.string()),
  last_delivery: v.optional(LastDeliverySchema),
  secret: StoredSecretSchema,
  previous_secret: v.optional(v.object({ ...StoredSecretSchema.entries, expires_at: v.string() })),
});
/** A stored endpoint, its secrets still sealed. Never returned by a route as is: see toEndpointResource. */
export type WebhookEndpoint = v.InferOutput<typeof EndpointItemSchema>;

export interface DeliveryOutcome {
  readonly at: Date;
  readonly ok: boolean;
  /** The receiver's HTTP status, when it answered. */
  readonly status?: number;
  /** Why it failed; kept to 200 characters. Never the receiver's body or a secret. */
  readonly message?: string;
}

export function endpointEncryptionContext(appId: string, endpointId: string) {
  return { purpose: 'webhook-secret', app_id: appId, endpoint_id: endpointId };
}

/** What the routes show of an endpoint: everything but its secrets. */
export function toEndpointResource(endpoint: WebhookEndpoint): EndpointResource {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events ?? null,
    description: endpoint.description ?? null,
    created_at: endpoint.created_at,
    status: endpoint.status,
    ...(endpoint.failing_since === undefined ? {} : { failing_since: endpoint.failing_since }),
    ...(endpoint.last_delivery === undefined ? {} : { last_delivery: endpoint.last_delivery }),
  };
}

/** True when `endpoint` takes events of `type` (no list: every type). */
export function subscribes(endpoint: Pick<WebhookEndpoint, 'events'>, type: EventType): boolean {
  return endpoint.events === undefined || endpoint.events.includes(type);
}

/** `POST /webhook-endpoints`: the new endpoint and its signing secret, which is never shown again. */
export async function createEndpoint(
  deps: CreateEndpointDeps,
  appId: string,
  input: CreateEndpointInput,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const url = checkWebhookUrl(input.url, deps.urlMode);
  if (!url.ok) throw new UnprocessableError(url.code, `body.url: ${url.reason}`);
  const events = input.events === undefined ? undefined : knownEventTypes(input.events);
  const id = `we_${uuidv7()}`;
  const now = deps.now();
  // Sealed before the slot is taken: a key-service failure then costs no slot.
  const { sealed, secret } = await newSecret(deps.keyWrapper, appId, id);
  const endpoint: WebhookEndpoint = {
    id,
    app_id: appId,
    url: url.url,
    ...(events === undefined ? {} : { events }),
    ...(input.description === undefined || input.description === '' ? {} : { description: input.description }),
    created_at: now.toISOString(),
    status: 'enabled',
    secret: { sealed, created_at: now.toISOString() },
  };
  if (!(await takeSlot(deps.table, appId, id)) && !((await reclaimStaleSlots(deps, appId, now)) > 0 && (await takeSlot(deps.table, appId, id)))) {
    throw new ConflictError('ENDPOINT_LIMIT', `An app has at most ${MAX_ENDPOINTS_PER_APP} webhook endpoints: delete one first`);
  }
  try {
    await deps.table.doc.send(
      new PutCommand({
        TableName: deps.table.name,
        Item: { ...keys.webhookEndpoint(appId, id), ...endpoint },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  } catch (error) {
    await releaseSlot(deps.table, appId, id).catch(() => undefined); // else reclaimed once stale
    throw error;
  }
  return { endpoint, secret };
}

/** Every endpoint of the app, oldest first (one Query; sk order is id order, UUIDv7 is time order). */
export async function listEndpoints(deps: EndpointStoreDeps, appId: string): Promise<WebhookEndpoint[]> {
  const endpoints: WebhookEndpoint[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await deps.table.doc.send(
      new QueryCommand({
        TableName: deps.table.name,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :ep)',
        ExpressionAttributeValues: { ':pk': keys.webhookEndpointsOf(appId), ':ep': 'EP#' },
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const { pk: _pk, sk: _sk, ...item } of page.Items ?? []) endpoints.push(v.parse(EndpointItemSchema, item));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return endpoints;
}

export async function getEndpoint(deps: EndpointStoreDeps, appId: string, endpointId: string): Promise<WebhookEndpoint | undefined> {
  const item = await getItem(deps.table, keys.webhookEndpoint(appId, endpointId));
  return item === undefined ? undefined : v.parse(EndpointItemSchema, item);
}

/** `DELETE /webhook-endpoints/{id}`: 404 WEBHOOK_ENDPOINT_NOT_FOUND when the app has no such endpoint. */
export async function deleteEndpoint(deps: EndpointStoreDeps, appId: string, endpointId: string): Promise<void> {
  try {
    await deps.table.doc.send(
      new DeleteCommand({ TableName: deps.table.name, Key: keys.webhookEndpoint(appId, endpointId), ConditionExpression: 'attribute_exists(pk)' }),
    );
  } catch (error) {
    if (isConditionalCheckFailed(error)) throw endpointNotFound();
    throw error;
  }
  // A crash here leaves the id in SLOTS without an item: reclaimed as stale by the next create at the limit.
  await releaseSlot(deps.table, appId, endpointId);
}

/**
 * `POST /webhook-endpoints/{id}/rotate-secret`: a new signing secret, returned once. The previous
 * one keeps signing beside it until `previous_secret_expires_at` (24 hours), so receivers can
 * switch without a gap; a second rotation within those hours drops the older one at once.
 */
export async function rotateSecret(deps: EndpointSealDeps, appId: string, endpointId: string): Promise<{ secret: string; previousSecretExpiresAt: string }> {
  const now = deps.now();
  const expiresAt = new Date(now.getTime() + PREVIOUS_SECRET_TTL_MS).toISOString();
  const { sealed, secret } = await newSecret(deps.keyWrapper, appId, endpointId);
  for (let attempt = 0; attempt < MAX_ROTATE_ATTEMPTS; attempt++) {
    const current = await getEndpoint(deps, appId, endpointId);
    if (!current) throw endpointNotFound();
    try {
      await deps.table.doc.send(
        new UpdateCommand({
          TableName: deps.table.name,
          Key: keys.webhookEndpoint(appId, endpointId),
          UpdateExpression: 'SET #secret = :secret, #previous = :previous',
          // The secret this rotation read is still the current one: a concurrent rotation makes us read again.
          ConditionExpression: 'attribute_exists(pk) AND #secret.#sealed.#wrapped = :seen',
          ExpressionAttributeNames: { '#secret': 'secret', '#previous': 'previous_secret', '#sealed': 'sealed', '#wrapped': 'wrapped_key' },
          ExpressionAttributeValues: {
            ':secret': { sealed, created_at: now.toISOString() },
            ':previous': { ...current.secret, expires_at: expiresAt },
            ':seen': current.secret.sealed.wrapped_key,
          },
        }),
      );
      return { secret, previousSecretExpiresAt: expiresAt };
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }
  throw new ConflictError('ROTATION_CONFLICT', 'The secret was rotated concurrently too many times: retry', { retryAfterSeconds: 1 });
}

/**
 * The secrets a delivery to `endpoint` is signed with, as `whsec_…` strings for the
 * standardwebhooks package: the current one first, then the previous one until it expires.
 * One KMS Decrypt per secret. Never log what this returns.
 */
export async function signingSecrets(deps: Pick<EndpointSealDeps, 'keyWrapper'>, endpoint: WebhookEndpoint, now: Date): Promise<string[]> {
  const context = endpointEncryptionContext(endpoint.app_id, endpoint.id);
  const sealedSecrets = [endpoint.secret.sealed];
  if (endpoint.previous_secret && Date.parse(endpoint.previous_secret.expires_at) > now.getTime()) sealedSecrets.push(endpoint.previous_secret.sealed);
  const out: string[] = [];
  for (const sealed of sealedSecrets) {
    const { [SECRET_NAME]: bytes } = await openSecrets(deps.keyWrapper, context, sealed, [SECRET_NAME]);
    out.push(`whsec_${bytes.toString('base64')}`);
    bytes.fill(0);
  }
  return out;
}

/**
 * Records a delivery's outcome on the endpoint (shown by GET as `last_delivery`); a success also
 * clears `failing`. An outcome older than the one recorded is dropped (deliveries run
 * concurrently), as is one for an endpoint deleted meanwhile. Returns whether it was recorded.
 */
export async function recordDelivery(deps: EndpointStoreDeps, appId: string, endpointId: string, outcome: DeliveryOutcome): Promise<boolean> {
  const delivery = {
    at: outcome.at.toISOString(),
    ok: outcome.ok,
    ...(outcome.status === undefined ? {} : { status: outcome.status }),
    ...(outcome.message === undefined ? {} : { message: outcome.message.slice(0, MAX_DELIVERY_MESSAGE) }),
  };
  return conditionalUpdate(deps.table, {
    Key: keys.webhookEndpoint(appId, endpointId),
    UpdateExpression: outcome.ok ? 'SET #last = :delivery, #status = :enabled REMOVE #failing_since' : 'SET #last = :delivery',
    ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#last) OR #last.#at <= :at)',
    ExpressionAttributeNames: { '#last': 'last_delivery', '#at': 'at', ...(outcome.ok ? { '#status': 'status', '#failing_since': 'failing_since' } : {}) },
    ExpressionAttributeValues: { ':delivery': delivery, ':at': delivery.at, ...(outcome.ok ? { ':enabled': 'enabled' } : {}) },
  });
}

/**
 * Marks the endpoint `failing` once a delivery first attempted at `since` has failed for the whole
 * retry window (3 days); `failing_since` keeps the earliest such time. Refused (false) when a
 * delivery succeeded after `since`: the endpoint works again. recordDelivery with a success clears it.
 */
export async function markFailing(deps: EndpointStoreDeps, appId: string, endpointId: string, since: Date): Promise<boolean> {
  return conditionalUpdate(deps.table, {
    Key: keys.webhookEndpoint(appId, endpointId),
    UpdateExpression: 'SET #status = :failing, #failing_since = if_not_exists(#failing_since, :since)',
    ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#last) OR #last.#ok = :false OR #last.#at <= :since)',
    ExpressionAttributeNames: { '#status': 'status', '#failing_since': 'failing_since', '#last': 'last_delivery', '#ok': 'ok', '#at': 'at' },
    ExpressionAttributeValues: { ':failing': 'failing', ':since': since.toISOString(), ':false': false },
  });
}

async function conditionalUpdate(table: Table, update: Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName'>): Promise<boolean> {
  try {
    await table.doc.send(new UpdateCommand({ TableName: table.name, ...update }));
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

const endpointNotFound = () => new NotFoundError('WEBHOOK_ENDPOINT_NOT_FOUND', 'This app has no webhook endpoint with this id');

/** The endpoint, or 404 WEBHOOK_ENDPOINT_NOT_FOUND (another app's included), as DELETE and rotate-secret answer. */
export async function requireEndpoint(deps: EndpointStoreDeps, appId: string, endpointId: string): Promise<WebhookEndpoint> {
  const endpoint = await getEndpoint(deps, appId, endpointId);
  if (!endpoint) throw endpointNotFound();
  return endpoint;
}

const EVENT_TYPE_TEXT = /^[a-z0-9_.]{1,64}$/;

/** The listed types in order, once each; 422 naming the first unknown one (by value when it looks like a type name, else by position). */
function knownEventTypes(listed: readonly string[]): EventType[] {
  const known = new Set<string>(EVENT_TYPES);
  listed.forEach((type, index) => {
    if (known.has(type)) return;
    const named = EVENT_TYPE_TEXT.test(type) ? `'${type}' is not an event type` : 'is not an event type';
    throw new UnprocessableError('UNKNOWN_EVENT_TYPE', `body.events[${index}]: ${named} (known: ${EVENT_TYPES.join(', ')})`);
  });
  return [...new Set(listed)] as EventType[];
}

async function newSecret(keyWrapper: KeyWrapper, appId: string, endpointId: string): Promise<{ sealed: SealedSecrets; secret: string }> {
  const bytes = randomBytes(SECRET_BYTES);
  try {
    const sealed = await sealSecrets(keyWrapper, endpointEncryptionContext(appId, endpointId), { [SECRET_NAME]: bytes });
    return { sealed, secret: `whsec_${bytes.toString('base64')}` };
  } finally {
    bytes.fill(0);
  }
}

/** Adds `endpointId` to the app's SLOTS set unless it holds MAX_ENDPOINTS_PER_APP ids already. */
async function takeSlot(table: Table, appId: string, endpointId: string): Promise<boolean> {
  return conditionalUpdate(table, {
    Key: keys.webhookEndpointSlots(appId),
    UpdateExpression: 'ADD #ids :id',
    ConditionExpression: 'attribute_not_exists(#ids) OR size(#ids) < :max',
    ExpressionAttributeNames: { '#ids': 'ids' },
    ExpressionAttributeValues: { ':id': new Set([endpointId]), ':max': MAX_ENDPOINTS_PER_APP },
  });
}

async function releaseSlot(table: Table, appId: string, endpointId: string): Promise<void> {
  await table.doc.send(
    new UpdateCommand({
      TableName: table.name,
      Key: keys.webhookEndpointSlots(appId),
      UpdateExpression: 'DELETE #ids :id',
      ExpressionAttributeNames: { '#ids': 'ids' },
      ExpressionAttributeValues: { ':id': new Set([endpointId]) },
    }),
  );
}

/** Gives back the slots whose endpoint item is missing and that were taken over STALE_SLOT_MS ago; returns how many. */
async function reclaimStaleSlots(deps: EndpointStoreDeps, appId: string, now: Date): Promise<number> {
  const slots = await getItem(deps.table, keys.webhookEndpointSlots(appId));
  const ids = slots?.ids instanceof Set ? [...(slots.ids as Set<string>)] : [];
  if (ids.length === 0) return 0;
  const present = new Set((await listEndpoints(deps, appId)).map((endpoint) => endpoint.id));
  const stale = ids.filter((id) => !present.has(id) && now.getTime() - uuidv7Time(id) > STALE_SLOT_MS);
  if (stale.length === 0) return 0;
  await deps.table.doc.send(
    new UpdateCommand({
      TableName: deps.table.name,
      Key: keys.webhookEndpointSlots(appId),
      UpdateExpression: 'DELETE #ids :stale',
      ExpressionAttributeNames: { '#ids': 'ids' },
      ExpressionAttributeValues: { ':stale': new Set(stale) },
    }),
  );
  return stale.length;
}

/** Milliseconds since the epoch in a `we_<UUIDv7>` id (its first 48 bits); NaN-safe: an unreadable id counts as new. */
function uuidv7Time(endpointId: string): number {
  const ms = Number.parseInt(endpointId.slice(3).replaceAll('-', '').slice(0, 12), 16);
  return Number.isFinite(ms) ? ms : Number.POSITIVE_INFINITY;
}
