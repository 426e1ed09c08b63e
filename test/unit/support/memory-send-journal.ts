import { expect } from 'vitest';
import type { Broadcast, SendJournal } from '../../../shared/chains/sender/ports.ts';

/** What happened to a send, in order: journal writes and broadcasts (or lost ones), by transaction hash. */
export type SendEvent = { readonly kind: 'record' | 'replace' | 'broadcast' | 'lost'; readonly tx_hash: string };

/**
 * A send journal in memory (record + replace) logging into `events`; `stored` is what it holds.
 * `crashOnReplace`: the process dies right after storing a replacement (before its broadcast).
 */
export function memoryJournal(events: SendEvent[], previous?: Broadcast, crashOnReplace = false): SendJournal & { stored: Broadcast | undefined } {
  const journal: SendJournal & { stored: Broadcast | undefined } = {
    previous,
    stored: previous,
    record: async (broadcast) => {
      journal.stored = broadcast;
      events.push({ kind: 'record', tx_hash: broadcast.tx_hash });
    },
    replace: async (next, current) => {
      expect(current.tx_hash).toBe(journal.stored?.tx_hash); // the sender replaces what the journal holds
      journal.stored = next;
      events.push({ kind: 'replace', tx_hash: next.tx_hash });
      if (crashOnReplace) throw new Error('process died');
    },
  };
  return journal;
}
