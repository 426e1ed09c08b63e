import type { VenueId } from './default-status.ts';

/**
 * Where each rule of shared/venues/rules.ts comes from: a source tag ([O] the venue's official
 * docs or SDK, [S] a secondary source, [I] an inference from them) or `sandbox choice` where research found
 * nothing. Kept apart from the rules so the functions' bundles carry the numbers, not this prose;
 * `GET /sandbox/venues` lists both.
 */
export const VENUE_RULE_SOURCES: Readonly<Record<VenueId, Readonly<Record<string, string>>>> = {
  venue_a: {
    chain: '[O] E1i (chain code "ARB"), [S] E6 (Arbitrum among the EVM chains)',
    token: '[O] E1c (USDC collateral, 6 decimals)',
    'deposit.mechanism': '[O] E1g, E1h (bridge config + quote + commit), [S] E6 / [O] R1 (depositWithId)',
    'deposit.minimum': 'sandbox choice: 1 USDC (StarkEx era "no minimum" [O] E2; Starknet era unknown); above the quote fee',
    firstDepositMinimum: 'sandbox choice: 1 USDC, as deposit.minimum',
    'deposit.fee': 'sandbox choice: 0.01 USDC quote fee ([O] E1h: the quote carries a fee; [S] E6 saw $0.01 on $5)',
    'withdrawal.minimum': 'sandbox choice: 1 USDC (unknown in research)',
    'withdrawal.fee': 'sandbox choice: 0.01 USDC quote fee ([O] E1h: bridged withdrawals need a quote; amount unknown)',
    'withdrawal.mechanism':
      '[O] E1g (POST /user/withdrawal, Stark-signed settlement to bridgeStarknetAddress, chain ARB with a committed quote_id); hash: x10xchange/rust-crypto-lib-base get_withdrawal_hash',
    'withdrawal.maximum': 'sandbox choice: none beyond the balance (StarkEx-era $50k / 12 h fast limit [O] E2 not carried over; Starknet-era limits unknown)',
    'withdrawal.chains': 'sandbox choice: ARB only (STRK withdrawals to an attached Starknet wallet are not offered)',
    'withdrawal.duplicateSalt': "sandbox choice: a settlement salt already used by the account answers that withdrawal's id (live behaviour unknown)",
    'withdrawal.latency': 'sandbox choice: paid as soon as the request is accepted (Starknet era "near-instant" [O] E3)',
    'deposit.latency': 'sandbox choice: credited on the watcher\'s next poll (Starknet era "near-instant" [O] E3)',
    'deposit.unmatched': 'sandbox choice: a depositWithId matching no committed, unexpired, unused quote of that amount is sent back to its sender',
    'bridge.address':
      'sandbox choice: SandboxRhinoBridge at 0x00000000000000000000000000000000000a0a01 on ARB (the live address comes from GET /user/bridge/config)',
    'quote.expiry': 'sandbox choice: a quote can be committed within 5 minutes; a committed quote is good for 30 minutes (unknown in research)',
    'account.bridgeStarknetAddress': 'sandbox choice: pedersen(stark key, account id), not a deployed contract',
    'account.ids': 'sandbox choice: account ids from 100001, vaults from 500001',
    'onboard.existing': 'sandbox choice: a second POST /auth/onboard for a wallet answers 409 (as the sub-account endpoint does, [O] E1d)',
    'apiKey.revoke': 'sandbox choice: DELETE /api/v1/user/account/api-key/{key} (L1-signed); the revocation path is not in research',
    'errors.codes': "sandbox choice: ERR codes are HTTP status × 10 (Extended's code table is not in research)",
    'trading.replace':
      'sandbox choice: the Stark key is fixed per wallet + account index ([O] E1a), so force_reinit rotates the API key (new one issued, earlier ones revoked)',
  },
  venue_b: {
    chain: '[O] H1, H2 (Arbitrum One, native USDC)',
    token: '[O] H1',
    'deposit.mechanism': '[O] H1 (plain ERC-20 transfer to Bridge2 0x2df1c51e09aecf9cacb7bc98cb1742757f163df7, credited to the sender)',
    'deposit.minimum': '[O] H1, H2 (5 USDC; less is lost)',
    firstDepositMinimum: '[O] H1, H2',
    'deposit.fee': '[O] H1 (none documented); the 1-USDC activation fee ([O] H7) is not applied to bridge deposits: sandbox choice (research §6.2)',
    'withdrawal.minimum': '[S] H11 (must be greater than the fee)',
    'withdrawal.fee': '[O] H3 ($1)',
    'withdrawal.payout':
      "[O] Bridge2.sol (research E: batchedFinalizeWithdrawals transfers USDC from Bridge2 to the destination); the ledger's withdraw delta from nktkas/hyperliquid [S]; the sandbox pays from Bridge2's address too",
    'approveBuilderFee.builderMinimum': '[O] H5 (builder needs at least 100 USDC account value)',
    'approveBuilderFee.maxFeeRate': '[O] H5 (at most 0.1% for perps; at most 10 builder approvals)',
    'approveAgent.limits': '[O] H3, H4 (1 unnamed + 3 named; same name or a new unnamed replaces; valid_until at most 180 days)',
    'nonce.window': '[O] H4 (100 highest per signer; within (T - 2 days, T + 1 day))',
    'exchange.requiresAccount': 'sandbox choice: actions from an address that never deposited are refused ("User or API Wallet ... does not exist.")',
    'withdrawal.latency': 'sandbox choice: paid as soon as the withdraw3 is accepted ([O] H1, H3 say 3-5 minutes live)',
    'deposit.latency': "sandbox choice: credited on the watcher's next poll of the chain ([O] H1 says under 1 minute live)",
  },
  venue_c: {
    depositNativeValue:
      'sandbox choice: StarkGate charges an L1-to-L2 message fee in ETH with each deposit (its estimateDepositFeeWei); the sandbox bridge asks 1e14 wei; counted in eth_required',
    chain: '[O] P1 (Paradex Bridge is Ethereum only)',
    token: '[O] P2, P4 (USDC only)',
    'deposit.mechanism': '[O] P3 (approve, then deposit to the bridge)',
    'deposit.minimum': 'sandbox choice: 1 USDC (unknown in research)',
    firstDepositMinimum: 'sandbox choice: 1 USDC, as deposit.minimum',
    'deposit.maximum': '[O] P4 (500,000 USDC per transaction)',
    'deposit.fee': '[O] P3 (none documented)',
    'withdrawal.minimum': 'sandbox choice: 1 USDC (unknown in research)',
    'withdrawal.fee': '[O] P5 (no fee; socialized-loss factor, 0 in the sandbox: sandbox choice)',
    'withdrawal.supported':
      'not by this service (issue 23): [O] P3 (a Starknet withdrawal, up to 8 hours of proving before the L1 payout), not sent or followed here',
    'deposit.messageFee': '[O] P1 (StarkGate bridge; its estimateDepositFeeWei() = 20000 gas x 5 gwei, sent as msg.value with the deposit)',
    'deposit.outsideLimits':
      'sandbox choice: a deposit below the minimum or above 500,000 USDC that reaches the bridge anyway is not credited and is returned to the L1 sender by the vault',
    'bridge.address':
      'sandbox choice: 0x…c0001 on the sandbox ETH chain (mainnet address unknown, research §6.3); published in /v1/system/config bridged_tokens[].l1_bridge_address',
    'systemConfig.classHashes':
      "sandbox choice: Paradex testnet's published account and proxy class hashes (mainnet's unknown); starknet_chain_id PRIVATE_SN_PARACLEAR_MAINNET [O] P7",
    'auth.jwt':
      "sandbox choice: HS256 with the venue's own secret (Paradex uses ES384); 300 s lifetime as [O] P2; signature expiration at most one week [O] P2",
    'subkeys.registrationSignature':
      'sandbox choice: required (the main key signs pedersen_array(account, public_key, timestamp, expiry), [O] P2; whether mainnet enforces it is unknown)',
    'subkeys.limit': 'sandbox choice: 10 active subkeys, names of 1 to 64 characters (unknown in research)',
    'withdrawal.request':
      'sandbox choice: POST /v1/withdrawals signed by the main L2 key (Paradex withdraws by a Starknet transaction, [O] P7); the record is a GET /v1/transfers entry [O] P2',
    'withdrawal.latency': 'sandbox choice: paid from the vault as soon as accepted ([O] P3: hours live)',
    'deposit.latency': "sandbox choice: credited on the watcher's next poll ([O] P3: several minutes live)",
  },
  venue_d: {
    chain: '[O] N1 (Ink, chain id 57073)',
    token: 'issue 10: USDC stands in for USDT0 ([O] N1, N2: product 0 is USDT0)',
    'deposit.mechanism': '[O] N2, N4 (approve + Endpoint.depositCollateral)',
    firstDepositMinimum: '[O] N5 (MIN_INITIAL_DEPOSIT_VALUE = 5)',
    'deposit.minimum': 'sandbox choice: 1 USDC for later deposits (unknown in research)',
    'deposit.fee': '[O] N2 (none documented for direct deposits)',
    'withdrawal.minimum': '[O] N2, N5 (must exceed the fee)',
    'withdrawal.fee':
      'sandbox choice: 1 USDC ([O] N2, N5: a per-product sequencer fee exists, fee_rates.withdraw_sequencer_fees, x18; its current value is unknown; the API reference example shows 0.01 for product 0)',
    'withdrawal.feeOnTop': '[O] N5 useWithdrawForm (the tx amount excludes the fee; the app signs input minus fee)',
    'withdrawal.payout':
      '[O] nado-contracts BaseWithdrawPool.sol (research E: submitWithdrawal transfers the token from the WithdrawPool to the owner, no event); the sandbox pays from the WithdrawPool address too',
    'withdrawal.signer': '[O] N8 (the owner or the linked signer may withdraw); v1 WithdrawCollateral pays the owner',
    'firstDeposit.belowMinimum': 'sandbox choice: a first deposit below 5 opens nothing and is returned to the depositor on chain (live behaviour unknown)',
    'deposit.belowMinimum': 'sandbox choice: a later deposit below 1 USDC is returned to the depositor on chain',
    'linkSigner.minimumValue': '[O] docs.nado.xyz Link Signer (a minimum of 5 USDT0 worth in account value), N5',
    'linkSigner.rateLimit': '[O] docs.nado.xyz Link Signer (50 requests every 7 days per subaccount), N5',
    'linkSigner.one': '[O] N8 (one linked signer per subaccount; a new one replaces it; the zero address revokes)',
    'nonce.sequential': '[O] docs.nado.xyz Nonces (tx_nonce increments by one with each successful execute)',
    'account.identity': '[O] N2 (bytes32 sender = owner ‖ 12-byte name; primary name "default"), stored as hex',
    errorCodes:
      '[O] docs.nado.xyz Errors (2002, 2016, 2017, 2022, 2024, 2025, 2027, 2028, 2030, 2036, 2038, 4001, 5000); the code for a malformed query is a sandbox choice',
    'deposit.latency': "sandbox choice: credited on the watcher's next poll of the chain (live: unknown, research §6.4)",
    'withdrawal.latency': 'sandbox choice: paid as soon as accepted ([O] N5: live submits on chain once a gas threshold is reached)',
  },
  venue_e: {
    chain: '[O] M1 (Polygon 137)',
    token: '[O] M1 (USDC.e), [O] M2 (pUSD collateral)',
    'deposit.mechanism': '[I] (direct ERC-20 transfer to the proxy wallet, research §5.4)',
    'deposit.minimum': '[O] M15 (bridge minCheckoutUsd $2 on Polygon), applied to direct transfers: sandbox choice',
    firstDepositMinimum: 'as deposit.minimum',
    'deposit.fee': '[O] M17 (no Polymarket fee)',
    'withdrawal.minimum': 'sandbox choice: 1 USDC (unknown in research)',
    'withdrawal.fee': '[O] M17 (CN: no withdrawal fee)',
    'withdrawal.supported':
      'not by this service (issue 23): [O] M17 (pUSD sent out of the proxy wallet to a one-time Bridge API address, tracked by GET /status), not sent or followed here',
    'account.proxyWallet': '[O] M5, M6 (Polymarket Proxy: CREATE2 of ProxyWalletFactory, salt keccak256(encodePacked(eoa)))',
    'account.serviceWallet': "sandbox choice: service_wallet_address is the user's EOA in this service, the proxy's owner (POLY_ADDRESS, the order signer)",
    'deposit.belowMinimum': 'sandbox choice: not wrapped, stays USDC.e in the proxy wallet ([O] M15: "Deposits below this threshold may fail to process")',
    'deposit.wrap': '[O] M2 (USDC.e wrapped 1:1 into pUSD); sandbox choice: the venue wraps a direct transfer itself, as its relayer operating the proxy',
    'deposit.latency': "sandbox choice: wrapped on the watcher's next poll of the chain ([O] M16: per-quote estCheckoutTimeMs live)",
    'trading.credentials': '[O] M12, M13 (ClobAuth L1 → apiKey, secret, passphrase; L2 HMAC); [I] research §5.3: no new private key',
    'trading.replace': 'sandbox choice: derive the old key (L1), DELETE /auth/api-key (L2, [O] M12), create a key for the next nonce',
    'clob.timestampSkew': 'sandbox choice: POLY_TIMESTAMP within 300 s of the venue clock',
    'balance.collateral':
      "[O] M12 (GET /balance-allowance?asset_type=COLLATERAL); [S] M19 (balance in base units); sandbox choice: the proxy's pUSD on chain minus accepted withdrawals",
    'withdrawal.mechanism':
      "[O] M17 (POST /withdraw {address, toChainId, toTokenAddress, recipientAddr}); sandbox choice: one request carrying the owner's EIP-712 authorisation and amount, instead of a relayer-signed pUSD transfer to a one-shot address",
  },
};
