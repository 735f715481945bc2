import RecordKeeperCommandLine

/// Reads a file, standard input or bytes in memory, a piece at a time: what `JSONStream` and
/// the commands that copy or slurp input read from. It holds no buffer of its own.
final class ByteReader {
    private let descriptor: Int32
    private let ownsDescriptor: Bool
    /// How errors name the input: a path or "standard input".
    let name: String
    /// Bytes in memory (`init(bytes:name:)`) and how many of them were read; nil for a file.
    private let memory: [UInt8]?
    private var memoryOffset = 0

    /// Opens a file; a missing file is `ExitCode.notFound`, others `ExitCode.ioError`.
    init(path: String) throws(ToolError) {
        let descriptor = SystemCalls.openForReading(path)
        guard descriptor >= 0 else {
            let number = SystemCalls.lastErrorNumber
            let reason = SystemCalls.lastErrorMessage
            throw ToolError(SystemCalls.isNoSuchFile(number) ? .notFound : .ioError,
                            "cannot open \(path): \(reason)")
        }
        self.descriptor = descriptor
        self.ownsDescriptor = true
        self.name = path
        self.memory = nil
    }

    /// Reads an open file from where its position is; `ownsDescriptor` closes it at the end.
    init(descriptor: Int32, name: String, ownsDescriptor: Bool) {
        self.descriptor = descriptor
        self.ownsDescriptor = ownsDescriptor
        self.name = name
        self.memory = nil
    }

    /// Reads standard input.
    init(standardInput: Void) {
        self.descriptor = SystemCalls.standardInput
        self.ownsDescriptor = false
        self.name = "standard input"
        self.memory = nil
    }

    /// Reads bytes already in memory.
    init(bytes: [UInt8], name: String) {
        self.descriptor = -1
        self.ownsDescriptor = false
        self.name = name
        self.memory = bytes
    }

    deinit {
        if ownsDescriptor {
            // Closing a descriptor opened only for reading cannot lose data.
            _ = SystemCalls.closeDescriptor(descriptor)
        }
    }

    /// Reads the next bytes into `buffer`, as many as are there up to its size; 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(ToolError) -> Int {
        guard buffer.count > 0 else { return 0 }
        if let memory {
            let count = min(buffer.count, memory.count - memoryOffset)
            memory.withUnsafeBytes { bytes in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[memoryOffset..<(memoryOffset + count)]))
            }
            memoryOffset += count
            return count
        }
        let count = SystemCalls.read(descriptor, into: buffer.baseAddress!, count: buffer.count)
        if count < 0 {
            throw ToolError(.ioError, "cannot read \(name): \(SystemCalls.lastErrorMessage)")
        }
        return count
    }

    /// Reads the next bytes into `buffer[range]`, as many as are there up to its size; 0 at
    /// the end.
    func read(into buffer: inout [UInt8], _ range: Range<Int>) throws(ToolError) -> Int {
        let result: Result<Int, ToolError> = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(ToolError) in try read(into: UnsafeMutableRawBufferPointer(rebasing: raw[range])) }
        }
        return try result.get()
    }

    /// Reads everything that is left (for small inputs such as `put KEY -`).
    func readAll() throws(ToolError) -> [UInt8] {
        var result: [UInt8] = []
        var piece = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = try read(into: &piece, 0..<piece.count)
            if count == 0 { return result }
            result.append(contentsOf: piece[0..<count])
        }
    }
}
