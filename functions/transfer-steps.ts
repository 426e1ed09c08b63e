import type { RouteNeeds } from './routes.ts';

/**
 * The Lambdas of the transfer state machine (statemachines/transfer.asl.json): one per step kind
 * (deposit, withdrawal, bridge), plus `settle`, which records a failure the step could not record
 * itself (the Map's Catch). They are not behind API Gateway: Step Functions invokes them (CDK:
 * infra/; locally: infra/local/step-functions/ calls the same modules). Payloads and results:
 * shared/transfers/task.ts (StepInvocation, StepResult, SettleInvocation).
 */
export type TransferStepKind = 'withdrawal' | 'bridge' | 'deposit' | 'settle';

export interface TransferStepFunction {
  /** Stable id, used for the Lambda's construct id (PascalCase). */
  readonly id: string;
  readonly kind: TransferStepKind;
  /** Handler module, relative to the repository root; it exports `handler`. */
  readonly entry: string;
  readonly needs: RouteNeeds;
}

/**
 * A step signs with the user's wallet through the enclave: the sealed access key (Decrypt) and an
 * op_jwt plus a service token (Sign). Table: it reads the app (APP#, shared/transfers/steps/wallets.ts)
 * and the account (ACCOUNT#, steps/core.ts) and writes its task (TASKS#) and the EVM senders'
 * leases (LEASE#<chain>#: the platform fee and the step's own sends).
 */
const STEP_SIGNING: RouteNeeds = {
  table: { reads: ['app', 'account'], writes: ['tasks', 'senderLease'] },
  accountAccessKey: ['Decrypt'],
  opJwtKey: ['Sign', 'GetPublicKey'],
  enclaveUrl: true,
  chains: true,
  platformFee: true,
};

/** A step that sends with sponsored gas: the sponsor's own key (not the op_jwt key) and its budget counters (SPONSOR#BUDGET#). */
const SPONSORING: RouteNeeds = { sponsorKey: ['Sign', 'GetPublicKey'] };

export const TRANSFER_STEP_FUNCTIONS: readonly TransferStepFunction[] = [
  /** Asks the source venue to pay out to the user's wallet (a signed venue request), polls the payout; takes the platform fee when it is the first step. */
  {
    id: 'TransferWithdrawalStep',
    kind: 'withdrawal',
    entry: 'functions/transfers/withdrawal-step.ts',
    needs: {
      ...STEP_SIGNING,
      // The venue balance lock (LEASE#VENUEBAL#, steps/venue-lock.ts) while its payout is under way.
      table: { reads: ['app', 'account'], writes: ['tasks', 'senderLease', 'venueBalanceLease'] },
      venues: true,
    },
  },
  /** Quotes the bridge, sends the deposit from the user's wallet exactly once (sponsored when asked: delegates), polls the fill. */
  {
    id: 'TransferBridgeStep',
    kind: 'bridge',
    entry: 'functions/transfers/bridge-step.ts',
    needs: {
      ...STEP_SIGNING,
      ...SPONSORING,
      table: { reads: ['app', 'account'], writes: ['tasks', 'senderLease', 'sponsorBudget'] },
      bridge: true,
      delegates: true,
    },
  },
  /** Sends the venue's deposit calls from the user's wallet exactly once, polls the venue until it credits. */
  {
    id: 'TransferDepositStep',
    kind: 'deposit',
    entry: 'functions/transfers/deposit-step.ts',
    needs: {
      ...STEP_SIGNING,
      ...SPONSORING,
      table: { reads: ['app', 'account'], writes: ['tasks', 'senderLease', 'venueBalanceLease', 'sponsorBudget'] },
      venues: true,
      delegates: true,
    },
  },
  /** Records a failure on the task (the step's own record wins when present) and releases the step's venue balance lock. */
  {
    id: 'TransferSettle',
    kind: 'settle',
    entry: 'functions/transfers/settle.ts',
    needs: { table: { writes: ['tasks', 'venueBalanceLease'] } },
  },
];
