import * as v from 'valibot';
import { VENUE_IDS } from '../venues/default-status.ts';

/**
 * `POST /sandbox/faults` (local sandbox only): the target's next `count` operations of a kind
 * fail, stall or (refund) are given back; `clear` ends the fault and releases what a stall held.
 * Venues take `deposit` and `withdrawal`; the `bridge` target (the sandbox bridge,
 * infra/local/bridge/) takes `bridge`: its next deposits fail (refunded, FAILED/REFUNDED), stall
 * (held until `clear` or the fill deadline) or are refunded (DONE/REFUNDED). With `address` the
 * fault is that wallet's only (several addresses' faults at once; tests running side by side each
 * fault their own user); without it, it hits whoever comes next.
 */
export const FaultRequest = v.object({
  target: v.picklist([...VENUE_IDS, 'bridge'], `must be one of ${[...VENUE_IDS, 'bridge'].join(', ')}`),
  operation: v.picklist(['deposit', 'withdrawal', 'bridge'], 'must be one of deposit, withdrawal, bridge'),
  mode: v.picklist(['fail', 'stall', 'refund', 'clear'], 'must be one of fail, stall, refund, clear'),
  count: v.optional(
    v.pipe(
      v.number('must be an integer'),
      v.safeInteger('must be an integer'),
      v.minValue(1, 'must be at least 1'),
      v.maxValue(1000, 'must be at most 1000'),
      v.description('How many of the next operations; required unless mode is "clear".'),
    ),
  ),
  address: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.maxLength(64, 'must be at most 64 characters'),
      v.description(
        'Scopes the fault to one wallet: only operations of this address take it (a venue: the depositor, or the withdrawer or recipient of a withdrawal, an EVM address; the bridge: the sender of a deposit or the recipient of its quote, EVM or Solana). `clear` with the address ends that fault and releases what it stalled. Without it the fault hits anyone.',
      ),
    ),
  ),
});
