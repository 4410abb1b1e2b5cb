/**
 * JWT bearer tokens with the library's own `Authenticator.layerJwt`: the HTTP code is unchanged, only the layer
 * providing `Authenticator` differs. With JWT_JWKS_URL (or JWT_PUBLIC_KEY, or JWT_SECRET), JWT_ISSUER and JWT_AUDIENCE
 * set, it verifies your identity provider's tokens, as `npm start` does (docs/authentication.md). With none set, it
 * starts a stand-in provider: a key set served on 127.0.0.1, and one token signed with its key, printed so that the
 * API can be tried with curl at once.
 *
 *   npx tsx examples/jwt-authenticator.ts   # PORT (default 3004), HOST, and the JWT_* variables of npm start
 */
import { Layer } from "effect"
import { exportJWK, generateKeyPair, SignJWT } from "jose"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Env from "./env.js"

/** The routing API's services: the memory store, and JWTs verified as `options` say. */
export const services = (options: Authenticator.JwtOptions) =>
  Layer.merge(RouteRepository.layerMemory, Authenticator.layerJwt(options))

/**
 * A stand-in identity provider: its key set at `jwksUrl` (one ES256 key, by `kid`), and `sign` to issue tokens as a
 * provider would, for `issuer` and `audience`. `close` stops serving the key set.
 */
export const standInProvider = async (issuer: string, audience: string) => {
  const { privateKey, publicKey } = await generateKeyPair("ES256")
  const kid = "stand-in-1"
  const body = JSON.stringify({ keys: [{ ...await exportJWK(publicKey), kid, alg: "ES256", use: "sig" }] })
  const server = Http.createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(body))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    jwksUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/certs`,
    sign: (subject: string, scope: string) =>
      new SignJWT({ scope }).setProtectedHeader({ alg: "ES256", kid }).setSubject(subject).setIssuer(issuer)
        .setAudience(audience).setExpirationTime("1h").sign(privateKey),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

if (Env.isMain(import.meta.url)) {
  let options = Env.jwtOptions()
  let closeProvider = () => Promise.resolve()
  if (options === undefined) {
    const issuer = "https://idp.example/realms/routing"
    const audience = "route-registry"
    const provider = await standInProvider(issuer, audience)
    options = { jwksUrl: provider.jwksUrl, issuer, audience }
    closeProvider = provider.close
    console.log(
      `no JWT keys set; a token valid for one hour: ${await provider.sign("example-admin", "routes:read routes:write")}`
    )
  }
  const listener = await AdminListener.fromLayer(services(options))
  Env.serve(listener, 3004, () => listener.dispose().then(closeProvider))
}
