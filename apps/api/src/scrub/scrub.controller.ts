import { Controller, HttpCode, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { ObjectPathQuerySchema, VerifyReportDtoSchema, type VerifyReportDto } from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal, ReadOnlyRoute } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { VerifyService } from './verify.service';

class VerifyQueryDto extends createZodDto(ObjectPathQuerySchema) {}

@ApiTags('placement')
@Controller('api/v1/placement')
export class ScrubController {
  constructor(private readonly verifier: VerifyService) {}

  /**
   * Checks this site's copy of the object at `path` now: re-hashes its file (unthrottled) and
   * records the outcome as the background scrub would (found good: `verifiedAt`; missing or
   * different: `suspect` with the error, no longer served, repaired by the mover). Answers what was
   * found here (`none`: no whole copy here) and every copy's state. Needs read access (404 for an
   * object the caller cannot read); a collection is 422.
   */
  @Answer(200, VerifyReportDtoSchema, "This site's finding and every copy's state")
  @Fails(404, 409)
  @Post('verify')
  @HttpCode(200)
  // Reading the bytes is all the caller asks; what is recorded is the site's own finding.
  @ReadOnlyRoute()
  verify(@CurrentPrincipal() p: Principal, @Query() q: VerifyQueryDto): Promise<VerifyReportDto> {
    return this.verifier.verify(p, q.path);
  }
}
