import { v7 as uuidv7 } from 'uuid';
import type { Table } from '../db/client.ts';
import { listEvents } from './log.ts';
import { type DeliveryQueue, deliveryGroup } from './publisher.ts';
import type { EventType } from './types.ts';

/**
 * `POST /webhook-endpoints/{id}/replay` (issue 24): queues the logged events after a cursor that
 * the endpoint subscribes to, again, each with its own id (`webhook-id`) and in log order; per
 * resource they keep their order behind any delivery of that resource still waiting. At most
 * REPLAY_MAX_EVENTS per call, so a call stays well inside API Gateway's 29 s: `next` and `more`
 * say where to continue.
 */
export const REPLAY_MAX_EVENTS = 1000;
const PAGE = 250;

export interface ReplayResult {
  readonly replay_id: string;
  readonly queued: number;
  /** The cursor of the last event looked at: pass it as `after` to replay on. */
  readonly next: string;
  /** More events may follow `next`. */
  readonly more: boolean;
}

export async function replayEvents(
  deps: { readonly table: Table; readonly deliveries: DeliveryQueue; readonly now: () => Date },
  endpoint: { readonly app_id: string; readonly endpoint_id: string; readonly events?: readonly EventType[] },
  after: number,
): Promise<ReplayResult> {
  const replay = `rp_${uuidv7()}`;
  let cursor = after;
  let queued = 0;
  let more = true;
  for (;;) {
    const want = Math.min(PAGE, REPLAY_MAX_EVENTS - queued);
    if (want === 0) break; // the most one call queues: more may follow `next`
    const page = await listEvents(
      deps.table,
      endpoint.app_id,
      { after: cursor, limit: want, ...(endpoint.events ? { types: endpoint.events } : {}) },
      deps.now(),
    );
    await deps.deliveries.enqueue(
      page.events.map((event) => ({
        app_id: endpoint.app_id,
        endpoint_id: endpoint.endpoint_id,
        event_id: event.id,
        seq: event.seq,
        group: deliveryGroup(endpoint.endpoint_id, event.app_user_id, event.resource),
        replay,
        event,
      })),
    );
    queued += page.events.length;
    cursor = Number(page.next);
    if (page.events.length < want) {
      more = false; // listEvents reads on to `limit` unless the log ends
      break;
    }
  }
  return { replay_id: replay, queued, next: String(cursor), more };
}
