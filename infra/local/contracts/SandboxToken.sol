// SPDX-License-Identifier: MIT
pragma solidity ^0.8.30;

/**
 * @title SandboxToken
 * @notice SANDBOX ONLY — never deploy to a real chain: anyone can `mint`. A plain ERC-20 that the
 * local EVM sandbox installs (anvil_setCode) at the real USDC / USDC.e addresses, so code and
 * configuration use the mainnet token table unchanged.
 * @dev Installed as runtime code, so no constructor runs: `initialize` sets name, symbol and
 * decimals once. Reverts use the ERC-6093 custom errors.
 */
contract SandboxToken {
    string public name;
    string public symbol;
    uint8 public decimals;
    bool public initialized;
    uint256 public totalSupply;
    mapping(address account => uint256) public balanceOf;
    mapping(address owner => mapping(address spender => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    error AlreadyInitialized();
    error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed);
    error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed);
    error ERC20InvalidReceiver(address receiver);

    /// @notice Sets the metadata; callable once (stands in for the constructor under anvil_setCode).
    function initialize(string calldata name_, string calldata symbol_, uint8 decimals_) external {
        if (initialized) revert AlreadyInitialized();
        initialized = true;
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
    }

    /// @notice SANDBOX ONLY: the faucet. Open to anyone, creates `amount` out of thin air.
    function mint(address to, uint256 amount) external {
        if (to == address(0)) revert ERC20InvalidReceiver(address(0));
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _transfer(msg.sender, to, amount);
        return true;
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        // An allowance of type(uint256).max is infinite and never decreases (as OpenZeppelin's ERC20).
        if (allowed != type(uint256).max) {
            if (allowed < amount) revert ERC20InsufficientAllowance(msg.sender, allowed, amount);
            allowance[from][msg.sender] = allowed - amount;
        }
        _transfer(from, to, amount);
        return true;
    }

    function _transfer(address from, address to, uint256 amount) private {
        if (to == address(0)) revert ERC20InvalidReceiver(address(0));
        uint256 balance = balanceOf[from];
        if (balance < amount) revert ERC20InsufficientBalance(from, balance, amount);
        unchecked {
            balanceOf[from] = balance - amount;
        }
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}
