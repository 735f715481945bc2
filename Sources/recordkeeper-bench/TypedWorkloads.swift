// placeholder until RecordRepository exists
extension BenchRunner {
    func runTypedWorkload(_ workload: WorkloadID) async throws {
        log("\(workload.rawValue) skipped: the typed RecordRepository is not available in this build")
    }
}
