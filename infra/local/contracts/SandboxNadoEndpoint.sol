// SPDX-License-Identifier: MIT
pragma solidity ^0.8.30;

/**
 * @title SandboxNadoEndpoint
 * @notice SANDBOX ONLY. venue_d's Endpoint on INK with Nado's deposit entry point
 * (ENDPOINT_ABI of the nadohq shared package): `depositCollateral(bytes12 subaccountName, uint32 productId,
 * uint128 amount)` pulls the product's token from the caller. The real Endpoint queues the deposit
 * as a slow-mode transaction for the sequencer and emits no deposit event of its own; the sandbox
 * emits `DepositCollateral` with the subaccount's bytes32 sender (caller ‖ name) instead (sandbox
 * choice). Only product 0, the quote token, is supported. The operator (the sandbox venue) pays
 * withdrawals with `withdrawCollateral`.
 * @dev Installed with anvil_setCode, so no constructor runs: `initialize` sets the quote token and
 * the operator once.
 */
contract SandboxNadoEndpoint {
    uint32 public constant QUOTE_PRODUCT_ID = 0;

    address public operator;
    address public quote;
    bool public initialized;

    event DepositCollateral(bytes32 indexed sender, uint32 indexed productId, uint128 amount);
    event WithdrawCollateral(bytes32 indexed sender, uint32 indexed productId, uint128 amount, address to);

    error AlreadyInitialized();
    error NotOperator(address caller);
    error UnknownProduct(uint32 productId);
    error TokenCallFailed(address token);

    /// @notice Sets the quote token (product 0) and the operator that pays withdrawals; callable once.
    function initialize(address quote_, address operator_) external {
        if (initialized) revert AlreadyInitialized();
        initialized = true;
        quote = quote_;
        operator = operator_;
    }

    /// @notice Deposits `amount` of product `productId` (approved to this contract) into the caller's subaccount `subaccountName`.
    function depositCollateral(bytes12 subaccountName, uint32 productId, uint128 amount) external {
        if (productId != QUOTE_PRODUCT_ID) revert UnknownProduct(productId);
        bytes32 sender = bytes32(abi.encodePacked(msg.sender, subaccountName));
        _call(quote, abi.encodeCall(IERC20.transferFrom, (msg.sender, address(this), amount)));
        emit DepositCollateral(sender, productId, amount);
    }

    /// @notice Operator only: pays `amount` of product `productId` out of subaccount `sender` to `to`.
    function withdrawCollateral(bytes32 sender, uint32 productId, uint128 amount, address to) external {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        if (productId != QUOTE_PRODUCT_ID) revert UnknownProduct(productId);
        _call(quote, abi.encodeCall(IERC20.transfer, (to, amount)));
        emit WithdrawCollateral(sender, productId, amount, to);
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
