import { createPublicClient, hexToBigInt, type PublicClient, webSocket } from 'viem';

/** One chain's `newHeads` subscription: the latest head it pushed, while it is live. */
interface HeadSubscription {
  /** The latest head known: the seed read, then every pushed block. */
  readonly head: bigint | undefined;
  /** Subscribed and seeded, and no error since: `head` may be answered without a request. */
  readonly live: boolean;
  /** Resolves once subscribed and seeded (or given up: then `live` stays false). */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * The sandbox chains' heads as the sandbox's watchers (every venue, the bridge) read them each
 * tick.
 *
 * - Polling (the default): one `eth_blockNumber` per chain however many watchers ask within
 *   `maxAgeMs`, so a short tick costs a request per chain, not one per watcher. A head up to
 *   `maxAgeMs` old is a deposit seen that much later, never one missed: each watcher reads logs
 *   from its own cursor.
 * - `subscribe: true` (the local runtime): each chain's head comes from an `eth_subscribe`
 *   `newHeads` subscription over the node's WebSocket endpoint (anvil serves it on the RPC port),
 *   seeded by one `eth_blockNumber` read once the subscription is active, so no block after the
 *   seed can pass unseen. A watcher's tick then costs no request at all while the chain is quiet
 *   (measured: an idle runtime on a 50 ms tick spent 10 % of a core and its anvils 3 %, almost all
 *   of it in these reads). Until the subscription is live, and for good after it reports an error
 *   (a dropped socket may have missed blocks), the chain is read as in polling mode.
 */
export class ChainHeads {
  private readonly latest = new Map<string, { readonly at: number; readonly head: Promise<bigint> }>();
  private readonly subscriptions = new Map<string, HeadSubscription>();
  private readonly maxAgeMs: number;
  private readonly subscribe: boolean;
  private closed = false;

  constructor(maxAgeMs: number, options: { subscribe?: boolean } = {}) {
    this.maxAgeMs = maxAgeMs;
    this.subscribe = options.subscribe ?? false;
  }

  /** The head of the chain `rpcUrl` names, read through `client` unless another watcher read it within `maxAgeMs`. */
  head(rpcUrl: string, client: Pick<PublicClient, 'getBlockNumber'>): Promise<bigint> {
    if (this.subscribe && !this.closed) {
      const subscription = this.subscriptions.get(rpcUrl) ?? this.startSubscription(rpcUrl, client);
      if (subscription.live && subscription.head !== undefined) return Promise.resolve(subscription.head);
    }
    return this.read(rpcUrl, client);
  }

  /** Whether `rpcUrl`'s head comes from its subscription, once that has been tried (false when polled). */
  async subscribed(rpcUrl: string): Promise<boolean> {
    const subscription = this.subscriptions.get(rpcUrl);
    if (!subscription) return false;
    await subscription.ready;
    return subscription.live;
  }

  /** Ends every subscription (before the chains stop, so no socket reconnects to a stopped node). */
  async close(): Promise<void> {
    this.closed = true;
    const subscriptions = [...this.subscriptions.values()];
    this.subscriptions.clear();
    await Promise.all(subscriptions.map((subscription) => subscription.close()));
  }

  private read(rpcUrl: string, client: Pick<PublicClient, 'getBlockNumber'>): Promise<bigint> {
    const now = performance.now();
    const cached = this.latest.get(rpcUrl);
    if (cached && now - cached.at < this.maxAgeMs) return cached.head;
    const head = client.getBlockNumber({ cacheTime: 0 });
    this.latest.set(rpcUrl, { at: now, head });
    // A failed read is not kept: the next watcher asks the chain again.
    head.catch(() => {
      if (this.latest.get(rpcUrl)?.head === head) this.latest.delete(rpcUrl);
    });
    return head;
  }

  private startSubscription(rpcUrl: string, client: Pick<PublicClient, 'getBlockNumber'>): HeadSubscription {
    const socket = createPublicClient({ transport: webSocket(rpcUrl.replace(/^http/, 'ws'), { retryCount: 0, reconnect: false }) });
    const state: { head: bigint | undefined; live: boolean } = { head: undefined, live: false };
    const raise = (head: bigint) => {
      // Pushed in order; the seed read may have raced a push, so never step back past it.
      if (state.head === undefined || head > state.head) state.head = head;
    };
    const ready = (async () => {
      try {
        await socket.transport.subscribe({
          params: ['newHeads'],
          onData: (data: { result?: { number?: `0x${string}` } }) => {
            const number = data.result?.number;
            if (number !== undefined) raise(hexToBigInt(number));
          },
          onError: () => {
            state.live = false;
          },
        });
        // Active now: every later block is pushed, so this read plus the pushes miss none.
        raise(await client.getBlockNumber({ cacheTime: 0 }));
        state.live = !this.closed;
      } catch {
        state.live = false; // no WebSocket endpoint: this chain is polled
      }
    })();
    const subscription: HeadSubscription = {
      get head() {
        return state.head;
      },
      get live() {
        return state.live;
      },
      ready,
      close: async () => {
        state.live = false;
        await ready;
        // Closing the socket ends the subscription on the node's side too.
        const rpc = await socket.transport.getRpcClient().catch(() => undefined);
        rpc?.close();
      },
    };
    this.subscriptions.set(rpcUrl, subscription);
    return subscription;
  }
}
