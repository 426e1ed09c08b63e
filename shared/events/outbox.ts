import { v7 as uuidv7 } from 'uuid';
import type { EventType, OutboxEntry } from './types.ts';

/**
 * The outbox (issue 24): an event is recorded in the SAME conditional write as the state change it
 * reports, as an entry appended to the `outbox` list of the item that changed. A write whose
 * condition fails records nothing; a write that lands cannot lose its event. The publisher
 * (shared/events/publisher.ts) reads new entries from the item image the write produced (the
 * table's stream), so no second write, no transaction and no extra item is needed on the write
 * path: the only cost is the entry's bytes in the item.
 *
 * Entries are never removed: an item's outbox is its resource's event history, in write order.
 * A task's is bounded by its steps and resumes (tens of entries, each under 100 bytes).
 */
export const OUTBOX_ATTRIBUTE = 'outbox';

export function outboxEntries(types: readonly EventType[], occurredAt: string, resourceId?: string): OutboxEntry[] {
  return types.map((type) => ({ id: `evt_${uuidv7()}`, type, occurred_at: occurredAt, ...(resourceId ? { resource_id: resourceId } : {}) }));
}

/** The parts of an UpdateItem that `appendOutbox` extends. */
export interface UpdateParts {
  readonly sets: string[];
  readonly names: Record<string, string>;
  readonly values: Record<string, unknown>;
}

/**
 * Adds `outbox = list_append(if_not_exists(outbox, []), :entries)` to an update's SET clauses;
 * nothing when there is no event. Placeholders `#outbox`, `:outboxEmpty`, `:outboxNew`.
 */
export function appendOutbox(update: UpdateParts, types: readonly EventType[], occurredAt: string, resourceId?: string): void {
  if (types.length === 0) return;
  update.names['#outbox'] = OUTBOX_ATTRIBUTE;
  update.values[':outboxEmpty'] = [];
  update.values[':outboxNew'] = outboxEntries(types, occurredAt, resourceId);
  update.sets.push('#outbox = list_append(if_not_exists(#outbox, :outboxEmpty), :outboxNew)');
}
