import type { Broadcast, SendCandidate } from './ports.ts';

/** Every transaction signed for the send, in signing order (one for a send not replaced). */
export function candidatesOf(send: Broadcast): readonly SendCandidate[] {
  return send.candidates?.length ? send.candidates : [{ tx_hash: send.tx_hash, raw: send.raw }];
}
