// Subprocesses exist on macOS and Linux only (Tests/TestHelpers/ChildProcess.swift).
#if os(macOS) || os(Linux)

public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

#if os(Linux)
    /// A child process started with `posix_spawn` directly: what ``ChildProcess`` runs on Linux,
    /// with the part of `Process`'s interface the tests use.
    ///
    /// Not Foundation's `Process` there: its `run()` in swift-corelibs-foundation up to at least
    /// 6.3.1 lists `/proc/self/fd` by copying each entry's whole 256-byte `d_name`, past the end
    /// of glibc's buffer, and crashes (SIGSEGV in `memcpy`) now and then when the process has
    /// many descriptors open (swiftlang/swift-corelibs-foundation#5472). The full suite hit it
    /// in about one run in three.
    ///
    /// The child gets its own process group, default signal dispositions, an empty signal
    /// mask, and no descriptor of the test process but its standard input, output and error.
    /// A thread of its own waits for it to end.
    ///
    /// `@unchecked Sendable`: the configuration is set before `run()` and only read after; the
    /// outcome is written once by the waiting thread and read under `condition`.
    public final class SpawnedProcess: @unchecked Sendable {
        public var executableURL: URL?
        public var arguments: [String] = []
        public var currentDirectoryURL: URL?
        public var environment: [String: String]?
        /// Standard input, output and error: a `FileHandle` or a `Pipe` (its reading end for
        /// input, its writing end for output); nil inherits the test process's.
        public var standardInput: Any?
        public var standardOutput: Any?
        public var standardError: Any?
        /// Called on the waiting thread once the process has ended.
        public var terminationHandler: (@Sendable (SpawnedProcess) -> Void)?

        private let condition = NSCondition()
        private var pid: pid_t = 0
        private var started = false
        private var status: Int32?

        public init() {}

        public var processIdentifier: Int32 { condition.withLock { pid } }
        public var isRunning: Bool { condition.withLock { started && status == nil } }

        /// The exit status, or the signal that ended it.
        public var terminationStatus: Int32 {
            guard let status = condition.withLock({ status }) else { return 0 }
            return Self.exited(status) ? (status >> 8) & 0xff : status & 0x7f
        }

        public var terminationReason: Process.TerminationReason {
            guard let status = condition.withLock({ status }) else { return .exit }
            return Self.exited(status) ? .exit : .uncaughtSignal
        }

        /// Sends SIGTERM to a running child (as `Process.terminate()` does).
        public func terminate() {
            condition.withLock {
                if started, status == nil, pid > 0 { kill(pid, SIGTERM) }
            }
        }

        public func waitUntilExit() {
            condition.lock()
            defer { condition.unlock() }
            while started && status == nil { condition.wait() }
        }

        /// Starts the process.
        /// - Throws: `POSIXError` naming the step that failed (the child could not be made or
        ///   its program not executed: posix_spawn reports `exec` failures too).
        public func run() throws {
            guard let executableURL else { throw POSIXError(.ENOENT) }
            var actions = posix_spawn_file_actions_t()
            try Self.check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init")
            defer { posix_spawn_file_actions_destroy(&actions) }
            var attributes = posix_spawnattr_t()
            try Self.check(posix_spawnattr_init(&attributes), "posix_spawnattr_init")
            defer { posix_spawnattr_destroy(&attributes) }

            for (descriptor, target) in [
                (Self.descriptor(standardInput, reading: true), STDIN_FILENO),
                (Self.descriptor(standardOutput, reading: false), STDOUT_FILENO),
                (Self.descriptor(standardError, reading: false), STDERR_FILENO),
            ] {
                if descriptor == Self.nullDevice {
                    try Self.check(
                        posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0),
                        "open /dev/null")
                } else if let descriptor {
                    try Self.check(posix_spawn_file_actions_adddup2(&actions, descriptor, target), "dup2")
                }
            }
            try Self.closeOthers(&actions)
            if let directory = currentDirectoryURL?.path {
                try Self.check(Self.addChdir(&actions, directory), "chdir to \(directory)")
            }

            var none = sigset_t()
            sigemptyset(&none)
            try Self.check(posix_spawnattr_setsigmask(&attributes, &none), "setsigmask")
            var all = sigset_t()
            sigfillset(&all)
            sigdelset(&all, SIGKILL)
            sigdelset(&all, SIGSTOP)
            try Self.check(posix_spawnattr_setsigdefault(&attributes, &all), "setsigdefault")
            try Self.check(posix_spawnattr_setpgroup(&attributes, 0), "setpgroup")
            let flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP
            try Self.check(posix_spawnattr_setflags(&attributes, Int16(flags)), "setflags")

            let argv = ([executableURL.path] + arguments).map { strdup($0) } + [nil]
            defer { for argument in argv { free(argument) } }
            let variables = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") }
                + [nil]
            defer { for variable in variables { free(variable) } }

            var child: pid_t = 0
            try Self.check(posix_spawn(&child, executableURL.path, &actions, &attributes, argv, variables),
                           "posix_spawn \(executableURL.path)")
            condition.withLock {
                pid = child
                started = true
            }
            // As `Process` does: the child's ends of pipes are the child's alone now (a pipe
            // to a child that ended must fail writes, not fill up).
            if let pipe = standardInput as? Pipe { try pipe.fileHandleForReading.close() }
            for case let pipe as Pipe in [standardOutput, standardError] { try pipe.fileHandleForWriting.close() }
            let waiter = Thread { [self, child] in
                var result: Int32 = 0
                while waitpid(child, &result, 0) < 0 && errno == EINTR {}
                condition.withLock {
                    status = result
                    condition.broadcast()
                }
                terminationHandler?(self)
            }
            waiter.start()
        }

        private static func exited(_ status: Int32) -> Bool { status & 0x7f == 0 }

        private static func check(_ result: Int32, _ step: String) throws {
            guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO, userInfo: ["step": step]) }
        }

        /// `FileHandle.nullDevice` has no descriptor of its own: the child opens /dev/null.
        private static let nullDevice: Int32 = -1

        private static func descriptor(_ stream: Any?, reading: Bool) -> Int32? {
            switch stream {
            case let handle as FileHandle: handle === FileHandle.nullDevice ? nullDevice : handle.fileDescriptor
            case let pipe as Pipe: reading ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
            default: nil
            }
        }

        private typealias FileAction = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        private typealias ChdirAction = @convention(c) (
            UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>
        ) -> Int32

        /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later; Swift's Glibc
        /// module does not declare it), or else a close for each descriptor open now.
        private static func closeOthers(_ actions: inout posix_spawn_file_actions_t) throws {
            if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
                let closeFrom = unsafeBitCast(symbol, to: FileAction.self)
                try check(closeFrom(&actions, 3), "closefrom")
                return
            }
            for descriptor in try openDescriptors() where descriptor > 2 {
                try check(posix_spawn_file_actions_addclose(&actions, descriptor), "close")
            }
        }

        /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29 and later).
        private static func addChdir(_ actions: inout posix_spawn_file_actions_t, _ directory: String) -> Int32 {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np")
            else { return ENOSYS }
            return unsafeBitCast(symbol, to: ChdirAction.self)(&actions, directory)
        }

        /// The descriptors open now, from `/proc/self/fd`, reading each entry's name in place
        /// (never copying the whole `d_name` field: the bug above).
        private static func openDescriptors() throws -> [Int32] {
            guard let directory = opendir("/proc/self/fd") else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            defer { closedir(directory) }
            let own = dirfd(directory)
            let nameOffset = MemoryLayout<dirent>.offset(of: \.d_name)!
            var descriptors: [Int32] = []
            while let entry = readdir(directory) {
                let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
                if let descriptor = Int32(name), descriptor != own { descriptors.append(descriptor) }
            }
            return descriptors
        }
    }
#else
    /// Foundation's `Process` on Darwin (the Linux crash this avoids there does not exist).
    public typealias SpawnedProcess = Process
#endif

extension SpawnedProcess {
    /// Runs the configured process to its end with its standard output in a pipe, and returns
    /// all it wrote there; its exit status is then `terminationStatus`.
    /// - Throws: what `run()` throws when the process cannot be started.
    public func runReadingOutput() throws -> Data {
        let pipe = Pipe()
        standardOutput = pipe
        try run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        waitUntilExit()
        return output
    }
}

#endif
