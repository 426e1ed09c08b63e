// SPDX-License-Identifier: MIT
pragma solidity ^0.8.30;

/**
 * @title SandboxRhinoBridge
 * @notice SANDBOX ONLY. venue_a's deposit bridge on ARB, shaped like rhino.fi's DVFDepositContract
 * (docs.rhino.fi/contracts/evm; rhinofi/contracts_public bridge-deposit/DVFDepositContract.sol):
 * `depositWithId(token, amount, commitmentId)` pulls the ERC-20 from the caller and emits the
 * same `BridgedDepositWithId` event, which the sandbox venue matches to a committed quote id.
 * The operator (the sandbox venue) pays withdrawals out with `withdrawV2`, as rhino's authorized
 * accounts do.
 * @dev Installed with anvil_setCode, so no constructor runs: `initialize` sets the operator once.
 */
contract SandboxRhinoBridge {
    address public operator;
    bool public initialized;

    event BridgedDepositWithId(address sender, address origin, address token, uint256 amount, uint256 commitmentId);
    event BridgedWithdrawal(address user, address token, uint256 amount, string withdrawalId);

    error AlreadyInitialized();
    error NotOperator(address caller);
    error BlackholeNotAllowed();
    error TokenCallFailed(address token);

    /// @notice Sets the operator that pays withdrawals; callable once.
    function initialize(address operator_) external {
        if (initialized) revert AlreadyInitialized();
        initialized = true;
        operator = operator_;
    }

    /// @notice Deposits `amount` of `token` (approved to this contract) for the committed quote `commitmentId`.
    function depositWithId(address token, uint256 amount, uint256 commitmentId) external {
        if (token == address(0)) revert BlackholeNotAllowed();
        _call(token, abi.encodeCall(IERC20.transferFrom, (msg.sender, address(this), amount)));
        emit BridgedDepositWithId(msg.sender, tx.origin, token, amount, commitmentId);
    }

    /// @notice Operator only: pays `amount` of `token` to `to`.
    function withdrawV2(address token, address to, uint256 amount) external {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        _call(token, abi.encodeCall(IERC20.transfer, (to, amount)));
        emit BridgedWithdrawal(to, token, amount, "");
    }

    /// @dev SafeERC20 semantics: the token must be a contract, the call must succeed and return
    /// nothing or true; a token revert is re-thrown with its own data.
    function _call(address token, bytes memory data) private {
        if (token.code.length == 0) revert TokenCallFailed(token);
        (bool success, bytes memory returned) = token.call(data);
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
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}
