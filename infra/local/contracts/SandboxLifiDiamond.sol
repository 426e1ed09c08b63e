// SPDX-License-Identifier: MIT
pragma solidity ^0.8.30;

/**
 * @title SandboxLifiDiamond
 * @notice SANDBOX ONLY. Stands in for LI.FI's diamond, installed at LI.FI's published diamond
 * address on every sandbox EVM chain (shared/transfers/lifi.ts LIFI_CONTRACTS), so a quote's
 * `estimate.approvalAddress` and `transactionRequest.to` are the addresses a live quote names and
 * the production allow-list holds. As live, the wallet first approves the diamond for the amount,
 * then calls a facet whose first argument is LI.FI's `ILiFi.BridgeData` (v1.0.1, the struct and
 * events below as LI.FI's src/Interfaces/ILiFi.sol declares them), and the diamond pulls
 * `minAmount` of `sendingAssetId` from the caller with `transferFrom`, then emits
 * `LiFiTransferStarted(bridgeData)` (and `BridgeToNonEVMChain` for a Solana receiver).
 *
 * The sandbox bridge finds a deposit by that event in the transaction's receipt, its
 * `transactionId` naming the quote: never by the transaction's own sender, recipient or input,
 * which an EIP-7702 sponsored call (the sponsor sends, the wallet's delegated code makes this call)
 * does not carry. docs/bridge.md, "Deposits".
 * @dev Installed with anvil_setCode: no constructor, no storage.
 */
contract SandboxLifiDiamond {
    struct BridgeData {
        bytes32 transactionId;
        string bridge;
        string integrator;
        address referrer;
        address sendingAssetId;
        address receiver;
        uint256 minAmount;
        uint256 destinationChainId;
        bool hasSourceSwaps;
        bool hasDestinationCall;
    }

    /// @notice The sandbox bridge's own facet data: where the tokens go, and a non-EVM receiver (a Solana address's 32 bytes).
    struct SandboxData {
        address vault;
        bytes32 nonEVMReceiver;
    }

    event LiFiTransferStarted(BridgeData bridgeData);
    event BridgeToNonEVMChain(bytes32 indexed transactionId, uint256 indexed destinationChainId, bytes receiver);

    /// @dev LI.FI's receiver for a non-EVM destination (LibAsset NON_EVM_ADDRESS).
    address internal constant NON_EVM_ADDRESS = 0x11f111f111f111F111f111f111F111f111f111F1;

    error TokenCallFailed(address token);
    error InvalidReceiver();
    error InvalidAmount();
    error NativeAssetNotSupported();
    error InformationMismatch();

    /// @notice LI.FI's validateBridgeData (but for the same-network check: the sandbox's same-chain
    /// routes, USDC to USDC.E, go through this facet where LI.FI would use its swap facet), then pulls `minAmount` of the sending asset from the caller (who approved this contract) into `vault`.
    function startBridgeTokensViaSandbox(BridgeData calldata _bridgeData, SandboxData calldata _sandboxData) external payable {
        if (_bridgeData.receiver == address(0)) revert InvalidReceiver();
        if (_bridgeData.minAmount == 0) revert InvalidAmount();
        if (_bridgeData.hasSourceSwaps || _bridgeData.hasDestinationCall) revert InformationMismatch();
        address token = _bridgeData.sendingAssetId;
        if (token == address(0) || msg.value != 0) revert NativeAssetNotSupported();
        if (token.code.length == 0) revert TokenCallFailed(token);
        (bool success, bytes memory returned) = token.call(abi.encodeCall(IERC20.transferFrom, (msg.sender, _sandboxData.vault, _bridgeData.minAmount)));
        if (!success) {
            assembly ("memory-safe") {
                revert(add(returned, 32), mload(returned))
            }
        }
        if (returned.length != 0 && (returned.length != 32 || !abi.decode(returned, (bool)))) revert TokenCallFailed(token);
        if (_bridgeData.receiver == NON_EVM_ADDRESS) {
            emit BridgeToNonEVMChain(_bridgeData.transactionId, _bridgeData.destinationChainId, abi.encodePacked(_sandboxData.nonEVMReceiver));
        }
        emit LiFiTransferStarted(_bridgeData);
    }
}

interface IERC20 {
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}
