// SPDX-License-Identifier: MIT
pragma solidity ^0.8.30;

/**
 * @title SandboxPriceFeed
 * @notice SANDBOX ONLY. A Chainlink Data Feed proxy as consumers read it: AggregatorV3Interface
 * (smartcontractkit/chainlink contracts/src/v0.8/shared/interfaces/AggregatorV3Interface.sol):
 * `decimals`, `description`, `version`, `getRoundData(uint80)` and `latestRoundData()` →
 * (roundId, answer, startedAt, updatedAt, answeredInRound). The sandbox installs it at the real
 * Ethereum-mainnet proxy addresses on the sandbox ETH chain (infra/local/price-feeds.ts).
 * The operator (the sandbox's funded account) writes rounds with `transmit`, as the oracle network
 * does on the real aggregator; there is no public setter. `updatedAt` is the operator's: the
 * sandbox passes its clock, or a past time to make the feed stale.
 * @dev Installed with anvil_setCode, so no constructor runs: `initialize` sets the operator,
 * decimals and description once.
 */
contract SandboxPriceFeed {
    struct Round {
        int256 answer;
        uint64 startedAt;
        uint64 updatedAt;
    }

    address public operator;
    bool public initialized;
    uint8 public decimals;
    uint80 public latestRound;
    string public description;
    mapping(uint80 => Round) private rounds;

    event AnswerUpdated(int256 indexed current, uint256 indexed roundId, uint256 updatedAt);

    error AlreadyInitialized();
    error NotOperator(address caller);
    /// @dev The revert Chainlink's aggregators give for a round they do not have.
    error NoDataPresent();

    /// @notice Sets the operator, decimals and description; callable once.
    function initialize(address operator_, uint8 decimals_, string calldata description_) external {
        if (initialized) revert AlreadyInitialized();
        initialized = true;
        operator = operator_;
        decimals = decimals_;
        description = description_;
    }

    /// @notice Operator only: a new round with `answer`, started and updated at `updatedAt` (unix seconds).
    function transmit(int256 answer, uint64 updatedAt) external {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        uint80 roundId = latestRound + 1;
        latestRound = roundId;
        rounds[roundId] = Round(answer, updatedAt, updatedAt);
        emit AnswerUpdated(answer, roundId, updatedAt);
    }

    function version() external pure returns (uint256) {
        return 4;
    }

    function getRoundData(uint80 roundId) public view returns (uint80, int256, uint256, uint256, uint80) {
        Round memory round = rounds[roundId];
        if (round.updatedAt == 0) revert NoDataPresent();
        return (roundId, round.answer, round.startedAt, round.updatedAt, roundId);
    }

    function latestRoundData() external view returns (uint80, int256, uint256, uint256, uint80) {
        return getRoundData(latestRound);
    }
}
