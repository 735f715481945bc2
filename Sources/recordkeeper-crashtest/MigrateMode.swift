import Foundation
import RecordKeeper

/// The migration mode of the helper, for the tests of migrations between processes.
///
///     recordkeeper-crashtest migrate --store PATH [--go PATH] [--busy-timeout S]
///         Prints "ready", waits until the file --go exists (when given), prints "opening" and
///         opens the store for writing (an empty write transaction), which migrates a store of
///         an older format; then prints "opened found=F format=V" from the opening event (the
///         format it found, the format it left). With --busy-timeout, locks are waited for up
///         to S seconds (default 5).
enum MigrateMode {
    /// The opening event's timings, from the event handler's thread.
    ///
    /// `@unchecked Sendable`: `timings` is only touched under `lock`.
    final class Opened: @unchecked Sendable {
        private let lock = NSLock()
        private var timings: OpeningTimings?

        func record(_ event: RecordStoreEvent) {
            guard case .opened(let timings) = event else { return }
            lock.withLock { self.timings = timings }
        }

        var value: OpeningTimings? { lock.withLock { timings } }
    }

    static func run(path: String, options: [String: String]) async throws {
        let busy = options["busy-timeout"].flatMap(Int.init) ?? 5
        let opened = Opened()
        let store = RecordStore(
            url: URL(fileURLWithPath: path),
            options: .init(busyTimeout: .seconds(busy), eventHandler: { opened.record($0) }))
        say("ready")
        if let go = options["go"] {
            while !FileManager.default.fileExists(atPath: go) { try await Task.sleep(for: .milliseconds(1)) }
        }
        say("opening")
        try await store.write { _ in }
        guard let timings = opened.value else { fail("the store opened without an opening event") }
        say("opened found=\(timings.formatVersionFound) format=\(timings.formatVersion)")
    }
}
