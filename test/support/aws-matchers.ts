// Registers aws-sdk-client-mock's vitest matchers (toReceiveCommandWith, …) for every test file.
import 'aws-sdk-client-mock-vitest/extend';
