#!/usr/bin/env python3
"""FF1 of NIST SP 800-38G Rev. 1 (Algorithm 7), transcribed on Python's
integers apart from src/core/ff1.cpp, with AES from the cryptography package
(python3-cryptography). NIST publishes no sample of radix 2, the radix of
public IDs: this script writes some, into ff1_reference_vectors.inc, which
test/unit/ff1_test.cpp includes.

    python3 test/unit/ff1_reference.py > test/unit/ff1_reference_vectors.inc

It checks itself against NIST's samples 1 to 9 first.
"""
import math
import random
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


def aes(key, block):
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return encryptor.update(block) + encryptor.finalize()


def prf(key, data):
    y = bytes(16)
    for i in range(0, len(data), 16):
        y = aes(key, bytes(a ^ b for a, b in zip(y, data[i:i + 16])))
    return y


def num(numerals, radix):
    x = 0
    for numeral in numerals:
        x = x * radix + numeral
    return x


def str_m(x, radix, m):
    numerals = []
    for _ in range(m):
        numerals.append(x % radix)
        x //= radix
    return numerals[::-1]


def ff1_encrypt(key, radix, tweak, x):
    n, t = len(x), len(tweak)
    u = n // 2
    v = n - u
    a, b_half = x[:u], x[u:]
    # b = ceil(ceil(v * log2(radix)) / 8), exactly: the bits of radix^v - 1
    # when radix is a power of two, of radix^v otherwise.
    bits = (radix ** v - 1).bit_length() if radix & (radix - 1) == 0 else (radix ** v).bit_length()
    b = math.ceil(bits / 8)
    d = 4 * math.ceil(b / 4) + 4
    p = bytes([1, 2, 1]) + radix.to_bytes(3, 'big') + bytes([10, u % 256]) + n.to_bytes(4, 'big') \
        + t.to_bytes(4, 'big')
    for i in range(10):
        q = tweak + bytes((-t - b - 1) % 16) + bytes([i]) + num(b_half, radix).to_bytes(b, 'big')
        r = prf(key, p + q)
        s = r
        j = 1
        while len(s) < d:
            s += aes(key, bytes(x ^ y for x, y in zip(r, j.to_bytes(16, 'big'))))
            j += 1
        y = int.from_bytes(s[:d], 'big')
        m = u if i % 2 == 0 else v
        c = (num(a, radix) + y) % radix ** m
        a, b_half = b_half, str_m(c, radix, m)
    return a + b_half


def digits(text):
    return [int(ch, 36) for ch in text]


def text(numerals):
    return ''.join('0123456789abcdefghijklmnopqrstuvwxyz'[n] for n in numerals)


KEYS = ['2B7E151628AED2A6ABF7158809CF4F3C',
        '2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F',
        '2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94']
SAMPLES = [(10, '', '0123456789'), (10, '39383736353433323130', '0123456789'),
           (36, '3737373770717273373737', '0123456789abcdefghi')]
EXPECTED = ['2433477484', '6124200773', 'a9tv40mll9kdu509eum',
            '2830668132', '2496655549', 'xbj3kv35jrawxv32ysr',
            '6657667009', '1001623463', 'xs8a0azh2avyalyzuwd']


def main():
    for k, key in enumerate(KEYS):
        for s, (radix, tweak, plaintext) in enumerate(SAMPLES):
            got = text(ff1_encrypt(bytes.fromhex(key), radix, bytes.fromhex(tweak), digits(plaintext)))
            if got != EXPECTED[3 * k + s]:
                sys.exit('sample %d: %s, expected %s' % (3 * k + s + 1, got, EXPECTED[3 * k + s]))
    rng = random.Random(40)
    print('// Written by test/unit/ff1_reference.py: {key, tweak, bits, plaintext, ciphertext}.')
    for bits in [20, 21, 32, 33, 47, 62, 63, 63, 63, 63, 64]:
        key = KEYS[rng.randrange(3)]
        tweak = bytes(rng.randrange(256) for _ in range(rng.choice([0, 0, 1, 5, 16, 17, 40])))
        value = rng.randrange(2 ** bits)
        x = [(value >> (bits - 1 - i)) & 1 for i in range(bits)]
        y = ff1_encrypt(bytes.fromhex(key), 2, tweak, x)
        print('    {"%s", "%s", %d, %dull, %dull},' % (key, tweak.hex(), bits, value, num(y, 2)))


if __name__ == '__main__':
    main()
