export { DEFAULT_POLICY, defaultPolicy } from './default-policy.ts';
export { evaluatePolicy, hasDailyLimit, type PolicyDecision } from './evaluate.ts';
export { type PolicyChains, type SignFacts, type SignFactsInput, signFacts } from './facts.ts';
export * from './policy.ts';
