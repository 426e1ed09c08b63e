// SPDX-License-Identifier: MIT
pragma solidity ^0.8.30;

/**
 * @title SandboxPayoutPool
 * @notice SANDBOX ONLY. The contract a venue pays its withdrawals out of, installed at the live
 * venue's address on the sandbox chain: venue_b's Bridge2 on ARB (Hyperliquid's validators
 * finalize withdrawals with a USDC transfer from Bridge2 to the destination) and venue_d's
 * WithdrawPool on INK (Nado's submitWithdrawal transfers the collateral to the owner). A payout is
 * then the same token Transfer from that address as live, which is what the account service
 * watches for (research E). The operator (the sandbox venue) pays with `pay`.
 * @dev Installed with anvil_setCode, so no constructor runs: `initialize` sets the operator once.
 */
contract SandboxPayoutPool {
    address public operator;
    bool public initialized;

    error AlreadyInitialized();
    error NotOperator(address caller);
    error TokenCallFailed(address token);

    /// @notice Sets the operator that pays withdrawals; callable once.
    function initialize(address operator_) external {
        if (initialized) revert AlreadyInitialized();
        initialized = true;
        operator = operator_;
    }

    /// @notice Operator only: pays `amount` of `token` to `to`.
    function pay(address token, address to, uint256 amount) external {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        if (token.code.length == 0) revert TokenCallFailed(token);
        (bool success, bytes memory returned) = token.call(abi.encodeCall(IERC20.transfer, (to, amount)));
        if (!success) {
            assembly ("memory-safe") {
                revert(add(returned, 32), mload(returned))
            }
        }
        if (returned.length != 0 && (returned.length != 32 || !abi.decode(returned, (bool)))) revert TokenCallFailed(token);
    }
}

interface IERC20 {
    function transfer(address to, uint256 amount) external returns (bool);
}
