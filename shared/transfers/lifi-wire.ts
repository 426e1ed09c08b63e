import * as v from 'valibot';
import { BridgeUnavailableError } from './bridge.ts';

/**
 * The parts of LI.FI's answers this service reads, parsed not cast: a quote is a `LiFiStep`
 * (@lifi/types src/step.ts), a status a `StatusResponse` (src/api.ts); research B. Big numbers are
 * decimal strings, `transactionRequest.value`/`gasLimit` hex strings; unknown fields pass.
 */
const amount = v.pipe(v.string(), v.regex(/^[0-9]+$/));
const chainId = v.number();

const LifiStepSchema = v.object({
  id: v.string(),
  type: v.string(),
  tool: v.string(),
  action: v.object({
    fromChainId: chainId,
    fromAmount: amount,
    /** What the wallet spends: an ERC-20 it approves `estimate.approvalAddress` for first, or LI.FI's native-coin address. */
    fromToken: v.object({ address: v.string() }),
    fromAddress: v.optional(v.string()),
    toChainId: chainId,
    toAddress: v.optional(v.string()),
  }),
  estimate: v.object({
    fromAmount: amount,
    toAmount: amount,
    toAmountMin: amount,
    approvalAddress: v.string(),
    executionDuration: v.number(),
  }),
  transactionRequest: v.optional(
    v.object({
      to: v.optional(v.string()),
      data: v.optional(v.string()),
      value: v.optional(v.string()),
      chainId: v.optional(chainId),
    }),
  ),
});
export type LifiStep = v.InferOutput<typeof LifiStepSchema>;

const LegSchema = v.object({ chainId: v.optional(chainId), txHash: v.optional(v.string()), amount: v.optional(amount) });
export type LifiStatusLeg = v.InferOutput<typeof LegSchema>;

const LifiStatusSchema = v.object({
  status: v.picklist(['NOT_FOUND', 'INVALID', 'PENDING', 'DONE', 'FAILED']),
  substatus: v.optional(v.string()),
  substatusMessage: v.optional(v.string()),
  transactionId: v.optional(v.string()),
  sending: v.optional(LegSchema),
  receiving: v.optional(LegSchema),
});

function parse<S extends v.GenericSchema>(schema: S, body: unknown, what: string): v.InferOutput<S> {
  const result = v.safeParse(schema, body);
  if (!result.success) throw new BridgeUnavailableError(`the bridge answered a ${what} this service cannot read (${v.getDotPath(result.issues[0]) ?? 'body'})`);
  return result.output;
}

export const parseLifiStep = (body: unknown): LifiStep => parse(LifiStepSchema, body, 'quote');
export const parseLifiStatus = (body: unknown) => parse(LifiStatusSchema, body, 'status');
