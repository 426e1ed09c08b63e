// SPDX-License-Identifier: MIT
pragma solidity ^0.8.30;

/**
 * @title SandboxLifiDiamond
 * @notice SANDBOX ONLY. Stands in for LI.FI's diamond, installed at LI.FI's published diamond
 * address on every sandbox EVM chain (shared/transfers/lifi.ts LIFI_CONTRACTS), so a quote's
 * `estimate.approvalAddress` and `transactionRequest.to` are the addresses a live quote names and
 * the production allow-list holds. As live, the wallet first approves the diamond for the amount,
 * then calls it, and the diamond pulls the tokens with `transferFrom` (research B: LI.FI's
 * ERC-20 flow). The sandbox bridge credits the Transfer into its vault and reads the quote id that
 * its own calldata carries after the call's arguments (the live diamond's BridgeData.transactionId
 * plays that part).
 * @dev Installed with anvil_setCode: no constructor, no storage.
 */
contract SandboxLifiDiamond {
    event SandboxBridgeStarted(address indexed sender, address indexed token, address indexed vault, uint256 amount);

    error TokenCallFailed(address token);

    /// @notice Pulls `amount` of `token` from the caller (who approved this contract) into the bridge's `vault`.
    function startBridgeTokensViaSandbox(address token, uint256 amount, address vault) external {
        if (token.code.length == 0) revert TokenCallFailed(token);
        (bool success, bytes memory returned) = token.call(abi.encodeCall(IERC20.transferFrom, (msg.sender, vault, amount)));
        if (!success) {
            assembly ("memory-safe") {
                revert(add(returned, 32), mload(returned))
            }
        }
        if (returned.length != 0 && (returned.length != 32 || !abi.decode(returned, (bool)))) revert TokenCallFailed(token);
        emit SandboxBridgeStarted(msg.sender, token, vault, amount);
    }
}

interface IERC20 {
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}
