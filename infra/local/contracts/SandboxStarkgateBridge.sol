// SPDX-License-Identifier: MIT
pragma solidity ^0.8.30;

/**
 * @title SandboxStarkgateBridge
 * @notice SANDBOX ONLY. venue_c's L1 bridge on ETH, shaped like StarkGate's StarknetTokenBridge
 * (tradeparadex/starkgate-contracts src/solidity/StarknetTokenBridge.sol): `deposit(token,
 * amount, l2Recipient)` is payable with the L1→L2 message fee (StarkGate's Fees: estimate 20000
 * gas × 5 gwei, accepted between 10^12 and 10^16 wei), pulls the ERC-20 and emits the same
 * `Deposit` event with a per-bridge nonce. The real bridge forwards the fee to the Starknet
 * messaging contract; the sandbox keeps it. The operator (the sandbox venue) pays withdrawals
 * with `withdraw`, which on the real bridge needs a consumed L2 message.
 * @dev Installed with anvil_setCode, so no constructor runs: `initialize` sets the operator once.
 */
contract SandboxStarkgateBridge {
    uint256 public constant DEPOSIT_FEE_GAS = 20000;
    uint256 public constant DEFAULT_WEI_PER_GAS = 5 gwei;
    uint256 public constant MIN_FEE = 10 ** 12;
    uint256 public constant MAX_FEE = 10 ** 16;

    address public operator;
    bool public initialized;
    uint256 public depositNonce;

    event Deposit(address indexed sender, address indexed token, uint256 amount, uint256 indexed l2Recipient, uint256 nonce, uint256 fee);
    event Withdrawal(address indexed recipient, address indexed token, uint256 amount);

    error AlreadyInitialized();
    error NotOperator(address caller);
    error InsufficientFeeValue(uint256 fee);
    error FeeValueTooHigh(uint256 fee);
    error L2AddressOutOfRange(uint256 l2Recipient);
    error TokenCallFailed(address token);

    /// @notice Sets the operator that pays withdrawals; callable once.
    function initialize(address operator_) external {
        if (initialized) revert AlreadyInitialized();
        initialized = true;
        operator = operator_;
    }

    function estimateDepositFeeWei() external pure returns (uint256) {
        return DEPOSIT_FEE_GAS * DEFAULT_WEI_PER_GAS;
    }

    /// @notice Deposits `amount` of `token` (approved to this contract) to the Starknet account `l2Recipient`; msg.value is the message fee.
    function deposit(address token, uint256 amount, uint256 l2Recipient) external payable {
        if (msg.value < MIN_FEE) revert InsufficientFeeValue(msg.value);
        if (msg.value > MAX_FEE) revert FeeValueTooHigh(msg.value);
        // A Starknet address is a felt below 2^251 - 256 (StarkGate's isValidL2Address).
        if (l2Recipient == 0 || l2Recipient >= 2 ** 251 - 256) revert L2AddressOutOfRange(l2Recipient);
        uint256 nonce = depositNonce++;
        _call(token, abi.encodeCall(IERC20.transferFrom, (msg.sender, address(this), amount)));
        emit Deposit(msg.sender, token, amount, l2Recipient, nonce, msg.value);
    }

    /// @notice Operator only: pays `amount` of `token` to `recipient`.
    function withdraw(address token, uint256 amount, address recipient) external {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        _call(token, abi.encodeCall(IERC20.transfer, (recipient, amount)));
        emit Withdrawal(recipient, token, amount);
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
