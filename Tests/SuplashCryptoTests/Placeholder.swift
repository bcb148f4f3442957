import XCTest
final class PlaceholderSuplashCryptoTests: XCTestCase { func testPlaceholder() {} }
