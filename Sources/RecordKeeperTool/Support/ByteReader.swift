import RecordKeeperCommandLine

/// A buffered byte reader over a file, standard input or bytes in memory, that keeps the line
/// and column of the next byte for error messages. Memory stays at one buffer whatever the input.
///
/// Columns count Unicode scalars (UTF-8 continuation bytes do not advance them), as editors do.
final class ByteReader {
    private let descriptor: Int32
    private let ownsDescriptor: Bool
    /// How errors name the input: a path or "standard input".
    let name: String
    // The reader is used from one place at a time (it is not Sendable) and these properties are
    // touched for every input byte; runtime exclusivity checks on them cost about a sixth of an
    // import's time, so they are turned off for these properties only.
    @exclusivity(unchecked) private var buffer: [UInt8]
    @exclusivity(unchecked) private var position = 0
    @exclusivity(unchecked) private var end = 0
    @exclusivity(unchecked) private var atEnd: Bool
    @exclusivity(unchecked) private(set) var line = 1
    @exclusivity(unchecked) private(set) var column = 1

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
        self.buffer = [UInt8](repeating: 0, count: 1 << 16)
        self.atEnd = false
    }

    /// Reads an open file from where its position is; `ownsDescriptor` closes it at the end.
    init(descriptor: Int32, name: String, ownsDescriptor: Bool) {
        self.descriptor = descriptor
        self.ownsDescriptor = ownsDescriptor
        self.name = name
        self.buffer = [UInt8](repeating: 0, count: 1 << 16)
        self.atEnd = false
    }

    /// Reads standard input.
    init(standardInput: Void) {
        self.descriptor = SystemCalls.standardInput
        self.ownsDescriptor = false
        self.name = "standard input"
        self.buffer = [UInt8](repeating: 0, count: 1 << 16)
        self.atEnd = false
    }

    /// Reads bytes already in memory.
    init(bytes: [UInt8], name: String) {
        self.descriptor = -1
        self.ownsDescriptor = false
        self.name = name
        self.buffer = bytes
        self.end = bytes.count
        self.atEnd = true
    }

    deinit {
        if ownsDescriptor {
            // Closing a descriptor opened only for reading cannot lose data.
            _ = SystemCalls.closeDescriptor(descriptor)
        }
    }

    /// The next byte without consuming it; nil at the end of the input.
    @inline(__always)
    func peek() throws(ToolError) -> UInt8? {
        if position < end { return buffer[position] }
        if atEnd { return nil }
        try refill()
        return position < end ? buffer[position] : nil
    }

    /// Consumes the byte `peek()` returned.
    @inline(__always)
    func advance() {
        let byte = buffer[position]
        position += 1
        if byte == 0x0A {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            column += 1
        }
    }

    /// Consumes and returns the next byte; nil at the end.
    @inline(__always)
    func next() throws(ToolError) -> UInt8? {
        guard let byte = try peek() else { return nil }
        advance()
        return byte
    }

    /// The buffered bytes not yet consumed (reading more if none), consumed at once without
    /// tracking lines; nil at the end. For copying input through.
    func nextChunk() throws(ToolError) -> ArraySlice<UInt8>? {
        guard try peek() != nil else { return nil }
        let chunk = buffer[position..<end]
        position = end
        return chunk
    }

    /// Reads everything that is left (for small inputs such as `put KEY -`).
    func readAll() throws(ToolError) -> [UInt8] {
        var result: [UInt8] = []
        while try peek() != nil {
            result.append(contentsOf: buffer[position..<end])
            position = end
        }
        return result
    }

    private func refill() throws(ToolError) {
        position = 0
        end = 0
        let count = buffer.withUnsafeMutableBytes { raw in
            SystemCalls.read(descriptor, into: raw.baseAddress!, count: raw.count)
        }
        if count < 0 {
            throw ToolError(.ioError, "cannot read \(name): \(SystemCalls.lastErrorMessage)")
        }
        if count == 0 {
            atEnd = true
        }
        end = count
    }
}
