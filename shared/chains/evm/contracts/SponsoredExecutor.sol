// SPDX-License-Identifier: MIT
pragma solidity ^0.8.30;

/**
 * @title SponsoredExecutor
 * @notice EIP-7702 delegate for gas-sponsored sends. An EOA delegates its code to this contract;
 * anyone (the sponsor, who pays the gas) may then call `execute` on the EOA's address, and the
 * calls run as the EOA only if the EOA itself signed them (EIP-712) for the current nonce and
 * before the deadline.
 * @dev Runs in the EOA's context: `address(this)` is the EOA and storage is the EOA's. Nothing is
 * initialised after delegation (an initialiser could be front-run), and the only state, the
 * nonce, lives at an ERC-7201 namespace so it cannot collide with storage written by any other
 * code the EOA delegates to before or after (storage survives re-delegation).
 */
contract SponsoredExecutor {
    struct Call {
        address to;
        uint256 value;
        bytes data;
    }

    /// @custom:storage-location erc7201:perp-wallet.sponsored-executor
    struct ExecutorStorage {
        uint256 nonce;
    }

    // keccak256(abi.encode(uint256(keccak256("perp-wallet.sponsored-executor")) - 1)) & ~bytes32(uint256(0xff))
    bytes32 private constant EXECUTOR_STORAGE_SLOT = 0xcad89a06fc44ba114168cd5b8a378803439115e0e31453d9ddb12d9ebda7f000;

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("SponsoredExecutor");
    bytes32 private constant VERSION_HASH = keccak256("1");
    bytes32 private constant CALL_TYPEHASH = keccak256("Call(address to,uint256 value,bytes data)");
    bytes32 private constant EXECUTE_TYPEHASH =
        keccak256("Execute(Call[] calls,uint256 nonce,uint256 deadline)Call(address to,uint256 value,bytes data)");

    /// @dev secp256k1n / 2: a larger `s` is the malleable twin of a valid signature (EIP-2).
    uint256 private constant MAX_S = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    /// @notice One successful `execute` on this account; `sponsor` is whoever submitted it.
    event Executed(uint256 indexed nonce, address indexed sponsor, uint256 callCount);

    error InvalidSignature();
    error InvalidNonce(uint256 expected, uint256 provided);
    error Expired(uint256 deadline, uint256 timestamp);

    /// @notice Runs `calls` in order as this account; reverts with the failing call's revert data.
    function execute(Call[] calldata calls, uint256 nonce, uint256 deadline, bytes calldata signature) external {
        if (block.timestamp > deadline) revert Expired(deadline, block.timestamp);
        ExecutorStorage storage $ = _executorStorage();
        uint256 expected = $.nonce;
        if (nonce != expected) revert InvalidNonce(expected, nonce);

        bytes32 structHash = keccak256(abi.encode(EXECUTE_TYPEHASH, _hashCalls(calls), nonce, deadline));
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", _domainSeparator(), structHash));
        if (_recover(digest, signature) != address(this)) revert InvalidSignature();

        // Consume the nonce before any external call, so a call re-entering `execute` cannot replay it.
        $.nonce = expected + 1;
        for (uint256 i; i < calls.length; ++i) {
            (bool ok, bytes memory result) = calls[i].to.call{value: calls[i].value}(calls[i].data);
            if (!ok) {
                assembly ("memory-safe") {
                    revert(add(result, 0x20), mload(result))
                }
            }
        }
        emit Executed(nonce, msg.sender, calls.length);
    }

    /// @notice The nonce the next `execute` on this account must carry.
    function executorNonce() external view returns (uint256) {
        return _executorStorage().nonce;
    }

    /// @notice The account keeps receiving the native coin while delegated.
    receive() external payable {}

    function _executorStorage() private pure returns (ExecutorStorage storage $) {
        assembly ("memory-safe") {
            $.slot := EXECUTOR_STORAGE_SLOT
        }
    }

    /// @dev EIP-712 domain bound to this chain and to this account (verifyingContract = the EOA).
    function _domainSeparator() private view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
    }

    /// @dev EIP-712 encoding of `Call[]`: keccak256 of the concatenated struct hashes.
    function _hashCalls(Call[] calldata calls) private pure returns (bytes32) {
        bytes32[] memory hashes = new bytes32[](calls.length);
        for (uint256 i; i < calls.length; ++i) {
            hashes[i] = keccak256(abi.encode(CALL_TYPEHASH, calls[i].to, calls[i].value, keccak256(calls[i].data)));
        }
        return keccak256(abi.encodePacked(hashes));
    }

    /// @dev 65-byte r‖s‖v only, v in {27, 28}, low s; anything else is rejected rather than normalised.
    function _recover(bytes32 digest, bytes calldata signature) private pure returns (address) {
        if (signature.length != 65) revert InvalidSignature();
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > MAX_S || (v != 27 && v != 28)) revert InvalidSignature();
        address signer = ecrecover(digest, v, r, s);
        if (signer == address(0)) revert InvalidSignature();
        return signer;
    }
}
