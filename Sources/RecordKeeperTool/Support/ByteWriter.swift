import RecordKeeperCommandLine

/// A buffered writer to a file descriptor: stdout, stderr, or an export file.
///
/// Not `Sendable`: each command creates its own and uses it from one place.
final class ByteWriter {
    private let descriptor: Int32
    private let name: String
    private var buffer: [UInt8] = []
    private let capacity = 1 << 16

    /// - Parameter name: How errors name the destination ("standard output", a file path).
    init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.name = name
        buffer.reserveCapacity(capacity)
    }

    static func standardOutput() -> ByteWriter {
        ByteWriter(descriptor: SystemCalls.standardOutput, name: "standard output")
    }

    func write(_ bytes: some Sequence<UInt8>) throws(ToolError) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= capacity { try flush() }
    }

    func write(_ text: String) throws(ToolError) {
        try write(text.utf8)
    }

    func write(byte: UInt8) throws(ToolError) {
        buffer.append(byte)
        if buffer.count >= capacity { try flush() }
    }

    func flush() throws(ToolError) {
        guard !buffer.isEmpty else { return }
        let succeeded = buffer.withUnsafeBytes { SystemCalls.writeAll(descriptor, $0) }
        buffer.removeAll(keepingCapacity: true)
        if !succeeded {
            throw ToolError(.ioError, "cannot write to \(name): \(SystemCalls.lastErrorMessage)")
        }
    }
}

/// Writes one line to stderr at once, unbuffered. A failure to write to stderr has nowhere to
/// be reported, so it is ignored on purpose.
enum StandardError {
    static func writeLine(_ line: String) {
        write(line + "\n")
    }

    static func write(_ text: String) {
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { SystemCalls.writeAll(SystemCalls.standardError, $0) }
        _ = written  // stderr is the last resort for messages; there is no one left to tell.
    }
}
