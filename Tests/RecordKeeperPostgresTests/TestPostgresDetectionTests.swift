import TestHelpers
import Testing

/// How the tests decide whether PostgreSQL tests run: CI counts as CI for every usual
/// spelling of "true", so a CI that sets `CI=1` fails on a missing server instead of skipping.
@Suite struct TestPostgresDetectionTests {
    @Test(arguments: ["true", "TRUE", "True", "1", "yes", "on", " true "])
    func `the usual true values of CI count as CI`(value: String) {
        #expect(TestPostgres.isTrue(value))
    }

    @Test(arguments: [nil, "", "0", "false", "no", "off", "maybe"] as [String?])
    func `unset, empty and false values of CI do not`(value: String?) {
        #expect(!TestPostgres.isTrue(value))
    }
}
